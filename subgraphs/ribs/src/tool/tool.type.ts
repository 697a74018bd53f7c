import type { ToolReachabilityStatus as StatusValue } from '@keelson/ribs-contract';
import { Field, ID, ObjectType, registerEnumType } from 'type-graphql';

export const ToolReachabilityStatus = {
  REACHABLE: 'REACHABLE',
  UNREGISTERED: 'UNREGISTERED',
  CROSS_RIB_DENIED: 'CROSS_RIB_DENIED',
  DENYLISTED: 'DENYLISTED',
} as const;
registerEnumType(ToolReachabilityStatus, {
  name: 'ToolReachabilityStatus',
  description:
    'The operator floor for a tool name (seed: reachable | unregistered | cross-rib-denied | denylisted). UNREGISTERED is not a denial: the name rides as an allow-list entry. Precedence: UNREGISTERED, CROSS_RIB_DENIED, DENYLISTED.',
});
export function reachabilityStatusOf(status: StatusValue): keyof typeof ToolReachabilityStatus {
  return status.toUpperCase().replace(/-/g, '_') as keyof typeof ToolReachabilityStatus;
}

@ObjectType({ description: 'Would this tool name project onto a turn the rib runs? (The floor only: registration, grants, denylist — not policies.)' })
export class ToolReachability {
  @Field()
  name!: string;

  @Field(() => ToolReachabilityStatus)
  status!: keyof typeof ToolReachabilityStatus;

  @Field(() => ID, { nullable: true, description: 'The owning rib, when a rib owns the tool.' })
  ownerRibId!: string | null;
}
