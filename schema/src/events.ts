import type { Actor } from './auth';
import { z } from 'zod';

/**
 * Streams of the event log. A stream is the unit of ordering: its cursor is a gap-free sequence
 * that commits in order, so `seq > cursor` never skips a row. Subscriptions that follow one entity
 * filter a stream by `key`.
 */
export const streams = {
  projects: 'projects',
  proof: 'proof',
  /** Harness session events, keyed by the canonical SessionId (see `harnessCaptureEventTypes`). */
  harness: 'harness',
  /** Run transitions, keyed by run id (`runEventTypes`). */
  runs: 'runs',
  /** Op frames, keyed by op id (`opFrameTypes`). */
  ops: 'ops',
  /** A new snapshot version, keyed by the snapshot key (`rib:<id>` / `rib:<id>:*`); the payload is `{ key, version, ribId }`. */
  snapshots: 'snapshots',
  /** Manifest invalidation nudges, keyed by rib id (`manifestInvalidationReasons`). */
  manifest: 'manifest',
  /** API tokens created and revoked, keyed by token id (never a secret). */
  identity: 'identity',
  /** Swarm events, keyed by swarm id (`swarmEventTypes`): ids only, bodies are read from the bus on request. */
  swarms: 'swarms',
  /** Chat events, keyed by chat id (`chatEventTypes`): messages, turns, tool calls and results. */
  chats: 'chats',
  /** The approval inbox: opened / answered / expired / cancelled, keyed by approval id (`approvalEventTypes`). */
  approvals: 'approvals',
  /** What the mesh can do changed (a harness CLI, a rib, the swarm bus, memory search), keyed by `<source>:<id>`. */
  capabilities: 'capabilities',
} as const;
export type StreamName = (typeof streams)[keyof typeof streams];

/** The channel NOTIFY uses; its payload is `<stream>:<seq>:<type>` only (the event's type, for the gateway's cache), never a body. */
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
  /** Who caused it (`{ subject, kind }`), null for the mesh's own work. */
  actor?: Actor | null;
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
  /** `setProjectTrust(trusted: true)` changed it: the project's own `.keelson/workflows` may run. */
  'PROJECT_TRUSTED',
  /** `setProjectTrust(trusted: false)` changed it: the project's own workflows are listed, not run. */
  'PROJECT_UNTRUSTED',
] as const;
export type ProjectEventType = (typeof projectEventTypes)[number];

/** The one event type of the `snapshots` stream: a new version of a key was persisted. */
export const SNAPSHOT_PUBLISHED = 'SNAPSHOT_PUBLISHED';

/** Ids only: a subscriber hydrates the payload from the snapshot table by `(key, version)`. */
export interface SnapshotEventPayload {
  key: string;
  version: number;
  ribId: string;
}

/** Why clients should re-fetch the rib manifest: the `manifest` stream's event types. */
export const manifestInvalidationReasons = ['region-registered', 'region-unregistered', 'rib-invalidated'] as const;
export type ManifestInvalidationReason = (typeof manifestInvalidationReasons)[number];

/**
 * The `harness` stream events memory capture consumes (the sessions subgraph emits them; other
 * types on the stream are ignored by capture). Every event's `key` is the canonical SessionId
 * `<harness-id>:<native-id>`. Ids, not bodies: `TRANSCRIPT_APPENDED` names transcript entries that
 * are final and durable, and capture fetches their bodies by id from the transcript's owner.
 *
 * - `SESSION_CREATED`: a session exists; capture creates its conversation stamped with `taskId`.
 * - `TRANSCRIPT_APPENDED`: these entries are final; capture stores each exactly once (dedupe key =
 *   the entry id, unique per conversation), so replays and retries are harmless.
 * - `SESSION_UPDATED` with `previousSessionId`: a rotation; capture writes the durable breadcrumb
 *   linking the two ids (history of the new id includes the old one's).
 */
export const harnessCaptureEventTypes = ['SESSION_CREATED', 'TRANSCRIPT_APPENDED', 'SESSION_UPDATED'] as const;
export type HarnessCaptureEventType = (typeof harnessCaptureEventTypes)[number];

const sessionIdField = z.string().min(1).max(512);
const label = z.string().min(1).max(200);

/** Fields every capture payload may carry. Unknown fields are allowed (the stream has other readers). */
const harnessPayloadBase = z.object({
  /** The canonical SessionId (equal to the event key). */
  sessionId: sessionIdField,
  /** @default the SessionId's part before the first colon */
  harnessId: label.nullish(),
  /** Who the memory belongs to (a mesh-shared database disambiguates by agent). @default the conversation's agent, else harnessId */
  agent: label.nullish(),
  /** Where the conversation happened. @default harnessId */
  channel: label.nullish(),
  /** The task that spawned the session, stamped on its conversation at creation. */
  taskId: label.nullish(),
});

export const sessionCreatedPayloadSchema = harnessPayloadBase;
export const transcriptAppendedPayloadSchema = harnessPayloadBase.extend({
  /** Ids of transcript entries that are now final, in transcript order (the native message ids). */
  entryIds: z.array(z.string().min(1).max(512)).min(1).max(1000),
});
export const sessionUpdatedPayloadSchema = harnessPayloadBase.extend({
  /** Set on rotation: the id this session was known by before. */
  previousSessionId: sessionIdField.nullish(),
});

export type SessionCreatedPayload = z.infer<typeof sessionCreatedPayloadSchema>;
export type TranscriptAppendedPayload = z.infer<typeof transcriptAppendedPayloadSchema>;
export type SessionUpdatedPayload = z.infer<typeof sessionUpdatedPayloadSchema>;

/** The harness part of a SessionId: everything before the first colon (the native id may contain more). */
export function harnessOfSessionId(sessionId: string): string {
  const colon = sessionId.indexOf(':');
  return colon === -1 ? sessionId : sessionId.slice(0, colon);
}
