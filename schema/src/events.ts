import { z } from 'zod';

/**
 * Streams of the event log. A stream is the unit of ordering: its cursor is a gap-free sequence
 * that commits in order, so `seq > cursor` never skips a row. Subscriptions that follow one entity
 * filter a stream by `key`.
 */
export const streams = {
  projects: 'projects',
  proof: 'proof',
} as const;
export type StreamName = (typeof streams)[keyof typeof streams];

/** The channel NOTIFY uses; its payload is `<stream>:<seq>` only, never a body. */
export const EVENTS_CHANNEL = 'keelson_events';

/** An event as the log stores it and tail() yields it. */
export interface EventEnvelope<P = unknown> {
  /** Opaque position in the stream, strictly increasing: resume with `after: cursor`. */
  cursor: string;
  stream: string;
  seq: number;
  /** The entity the event is about (a project id, a run id, a session id). */
  key: string;
  type: string;
  payload: P;
  at: Date;
}

/** Cursors are the decimal sequence; clients must treat them as opaque. */
export const cursorSchema = z
  .string()
  .regex(/^(0|[1-9][0-9]{0,14})$/, 'expected a cursor previously received from this stream');

export function encodeCursor(seq: number): string {
  return String(seq);
}

export function decodeCursor(cursor: string | null | undefined): number {
  if (cursor === null || cursor === undefined) return 0;
  return Number(cursorSchema.parse(cursor));
}

/** Project event types (`ProjectEvent.type`). */
export const projectEventTypes = [
  'PROJECT_CREATED',
  'PROJECT_CLONED',
  'WORKSPACE_ACQUIRED',
  'WORKSPACE_RELEASED',
  'MUTATION_LOCK_ACQUIRED',
  'MUTATION_LOCK_RELEASED',
] as const;
export type ProjectEventType = (typeof projectEventTypes)[number];
