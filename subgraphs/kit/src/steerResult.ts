import { steerStatuses, type SteerStatus } from '@keelson/schema';
import { Directive, Field, ObjectType, registerEnumType } from 'type-graphql';

export const SteerStatusEnum = Object.fromEntries(steerStatuses.map((s) => [s, s])) as { [K in SteerStatus]: K };
registerEnumType(SteerStatusEnum, {
  name: 'SteerStatus',
  description: 'ACCEPTED (taken into the live work), QUEUED (runs as the session\'s next turn, in order), REJECTED (not taken; `reason` says why).',
});

/** A steer's answer, one shape for every subgraph that takes steers (shared in the supergraph). */
@ObjectType({ description: 'Whether a steer was taken, how, and why not.' })
@Directive('@shareable')
export class SteerResult {
  @Field({ description: 'True when ACCEPTED or QUEUED.' })
  accepted!: boolean;

  @Field(() => SteerStatusEnum)
  status!: SteerStatus;

  @Field(() => String, { nullable: true })
  reason!: string | null;
}

/** A SteerResult from a status and its reason (`accepted` follows the status). */
export function steerResult(status: SteerStatus, reason: string | null): SteerResult {
  return Object.assign(new SteerResult(), { accepted: status !== 'REJECTED', status, reason });
}
