// The swarm workflow's Temporal messages, shared by the workflow and its clients (schema/PROTOCOL.md "Swarms").
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { swarmMessages, type SwarmBusEventSignal, type SwarmLocalMessageSignal, type SwarmStatus, type SwarmSteerResult } from '@keelson/schema';

/** Signal `swarmBusEvent`: one bus event of the swarm's channel, ids only (from the tail activity). */
export const swarmBusEventSignal = defineSignal<[SwarmBusEventSignal]>(swarmMessages.busEvent);

/** Signal `swarmLocalMessage`: a message the swarm itself just wrote, ingested at once. */
export const swarmLocalMessageSignal = defineSignal<[SwarmLocalMessageSignal]>(swarmMessages.localMessage);

/** Update `swarmSteer`: the operator's note, posted into the channel as the operator; rejected once the swarm ended. */
export const swarmSteerUpdate = defineUpdate<SwarmSteerResult, [string]>(swarmMessages.steer);

/** Signal `swarmStop`: end the swarm STOPPED with this reason. */
export const swarmStopSignal = defineSignal<[{ reason?: string }]>(swarmMessages.stop);

/** Query `swarmStatus` answer. */
export interface SwarmLiveStatus {
  swarmId: string;
  status: SwarmStatus;
  turnsUsed: number;
  queued: number;
  busy: number;
  nudges: number;
  concluded: boolean;
  agents: { id: string; status: string; turns: number; inboxDepth: number }[];
}

/** Query `swarmStatus`. */
export const swarmStatusQuery = defineQuery<SwarmLiveStatus>(swarmMessages.status);
