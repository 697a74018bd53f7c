import type { ManifestInvalidationReason as ReasonValue } from '@keelson/schema';
import { Field, ID, ObjectType, registerEnumType } from 'type-graphql';

export const ManifestInvalidationReason = {
  REGION_REGISTERED: 'REGION_REGISTERED',
  REGION_UNREGISTERED: 'REGION_UNREGISTERED',
  RIB_INVALIDATED: 'RIB_INVALIDATED',
} as const;
registerEnumType(ManifestInvalidationReason, {
  name: 'ManifestInvalidationReason',
  description: 'Why to re-fetch the manifest: a region was registered or unregistered at runtime, or the rib changed a descriptor (invalidateManifest).',
});
export function reasonOf(reason: ReasonValue): keyof typeof ManifestInvalidationReason {
  return reason.toUpperCase().replace(/-/g, '_') as keyof typeof ManifestInvalidationReason;
}

@ObjectType({ description: 'A nudge to re-fetch ribManifest (or that rib): one of its descriptors changed.' })
export class ManifestInvalidation {
  @Field({ description: 'Opaque; pass as `after` to resume right after this nudge.' })
  cursor!: string;

  @Field(() => ID)
  ribId!: string;

  @Field(() => ManifestInvalidationReason)
  reason!: keyof typeof ManifestInvalidationReason;

  @Field(() => Date)
  at!: Date;
}
