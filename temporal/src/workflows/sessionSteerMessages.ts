import type { Actor } from '@keelson/schema';
// The sessionSteer workflow's Temporal messages, shared by the workflow and its clients (schema/PROTOCOL.md "Steering a session").
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import { sessionSteerMessages, type SessionSteerAnswer, type SessionSteerState } from '@keelson/schema';

/** Update `sessionSteer`: one steer text for the session's queue (the update id deduplicates a caller's retry). */
export const sessionSteerUpdate = defineUpdate<SessionSteerAnswer, [{ text: string; actor?: Actor | null }]>(sessionSteerMessages.steer);

/** Query `sessionSteerStatus`: the queue as it stands. */
export const sessionSteerStatusQuery = defineQuery<SessionSteerState>(sessionSteerMessages.status);

/** The workflow id of a session's steer queue. */
export const sessionSteerWorkflowId = (sessionId: string): string => `session-steer-${sessionId}`;

