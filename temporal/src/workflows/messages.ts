// The run workflows' Temporal messages, shared by the workflows and their clients (schema/PROTOCOL.md
// "Run workflows: signals, updates, queries").
import type { Actor } from '@keelson/schema';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { opMessages, runMessages, type DagRunStatus, type DurableOpStatus, type NodeSteerArgs, type OpSteerResult, type RespondInput, type RespondResult } from '@keelson/schema';

/** Update `respond` on `dagRun`: answer an approval gate (validated; a rejection carries the reason). */
export const respondUpdate = defineUpdate<RespondResult, [RespondInput]>(runMessages.respond);

/** Query `status` on `dagRun`. */
export const runStatusQuery = defineQuery<DagRunStatus>(runMessages.status);

/** Signal `steer` on `durableOp`/`ribOp`: one steering note, unanswered (older callers; the swarm takes it too). */
export const steerSignal = defineSignal<[string]>(opMessages.steer);

/** Signal `cancelledBy` on `dagRun`/`durableOp`/`ribOp`: who asks for the cancel that follows it. */
export const cancelledBySignal = defineSignal<[Actor]>(runMessages.cancelledBy);

/** Update `steerNote` on `durableOp`/`ribOp`: one steering note, accepted with its index or rejected with the reason. */
export const opSteerUpdate = defineUpdate<OpSteerResult, [note: string, actor?: Actor | null]>(opMessages.steerNote);

/** Query `status` on `durableOp`. */
export const opStatusQuery = defineQuery<DurableOpStatus>(opMessages.status);

/** Update `steerNode` on `dagRun`: a note for a running prompt node, read between its tool rounds; answers the note's index. */
export const nodeSteerUpdate = defineUpdate<{ index: number }, [NodeSteerArgs]>(runMessages.steerNode);

/** Query `nodeSteerNotes` on `dagRun`: the notes a node was sent, in order. */
export const nodeSteerNotesQuery = defineQuery<string[], [string]>(runMessages.nodeSteerNotes);
