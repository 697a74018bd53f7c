import { capabilitySources, type CapabilityChangePayload, type CapabilitySource, type EventEnvelope } from '@keelson/schema';
import { GraphQLJSON } from 'graphql-scalars';
import { Field, ID, ObjectType, registerEnumType } from 'type-graphql';

export const CapabilitySourceEnum = Object.fromEntries(capabilitySources.map((s) => [s, s])) as { [K in CapabilitySource]: K };
registerEnumType(CapabilitySourceEnum, {
  name: 'CapabilitySource',
  description: 'HARNESS (a CLI installed or removed), RIB (activated or deactivated), SWARM_BUS (up or down), MEMORY_SEARCH (hybrid or lexical).',
});

@ObjectType({ description: 'What the mesh can do changed, as its read field (harnesses, ribManifest, swarmServer, memory search) now answers.' })
export class CapabilitiesChange {
  @Field({ description: 'Opaque; pass as `after` to resume right after this change.' })
  cursor!: string;

  @Field(() => Date)
  at!: Date;

  @Field(() => CapabilitySourceEnum)
  source!: CapabilitySource;

  @Field(() => ID, { description: 'The harness id, rib id, `bus` or `search`.' })
  id!: string;

  @Field({ description: 'Installed / activated / running / hybrid now.' })
  available!: boolean;

  @Field(() => Boolean, { nullable: true, description: 'What it was before; null the first time the mesh observed it.' })
  previous!: boolean | null;

  @Field(() => GraphQLJSON, { description: 'The small facts behind it (a version, a bus mode, a search mode).' })
  state!: unknown;

  @Field(() => String, { nullable: true, description: 'Why it is not available, when the read field says.' })
  reason!: string | null;
}

export function toCapabilitiesChange(e: EventEnvelope<CapabilityChangePayload>): CapabilitiesChange {
  return Object.assign(new CapabilitiesChange(), {
    cursor: e.cursor,
    at: e.at,
    source: e.payload.source,
    id: e.payload.id,
    available: e.payload.available,
    previous: e.payload.previous,
    state: e.payload.state,
    reason: e.payload.reason,
  });
}
