import type { Actor } from './auth';
/**
 * Names and shapes the runs subgraph, the `dagRun` / `durableOp` workflows and their activities share:
 * statuses, event types and payloads of the `runs` and `ops` streams, message names, limits.
 * Pure: the workflow sandbox imports it.
 */

/** A run's (and an op's) status, as `RunStatus` in the contract. */
export const runStatuses = ['RUNNING', 'PAUSED', 'SUCCEEDED', 'FAILED', 'CANCELLED'] as const;
export type RunStatus = (typeof runStatuses)[number];
export const terminalRunStatuses: readonly RunStatus[] = ['SUCCEEDED', 'FAILED', 'CANCELLED'];
export function isTerminalRunStatus(status: string): boolean {
  return (terminalRunStatuses as readonly string[]).includes(status);
}

/** A node's status. `WAITING` is an approval node whose gate is open. */
export const runNodeStatuses = ['PENDING', 'RUNNING', 'WAITING', 'SUCCEEDED', 'FAILED', 'SKIPPED', 'CANCELLED'] as const;
export type RunNodeStatus = (typeof runNodeStatuses)[number];
/** Statuses a node keeps across a resume: it never runs again. */
export const finalNodeStatuses: readonly RunNodeStatus[] = ['SUCCEEDED', 'SKIPPED'];

/**
 * Events of the `runs` stream (key = run id), one per transition, written in the transaction of the
 * transition. In order for one run: `RUN_STARTED` opens each launch; node events follow; one terminal
 * `RUN_SUCCEEDED` / `RUN_FAILED` / `RUN_CANCELLED` closes it.
 */
export const runEventTypes = [
  'RUN_STARTED',
  'NODE_STARTED',
  'NODE_ATTEMPT_FAILED',
  'NODE_SUCCEEDED',
  'NODE_FAILED',
  'NODE_SKIPPED',
  'NODE_CANCELLED',
  'NODE_WAITING',
  'RUN_PAUSED',
  'APPROVAL_ANSWERED',
  'RUN_RESUMED',
  'RUN_SUCCEEDED',
  'RUN_FAILED',
  'RUN_CANCELLED',
] as const;
export type RunEventType = (typeof runEventTypes)[number];

/** Ids and small facts only; outputs are fetched by id (`Run.nodes`). */
export interface RunEventPayload {
  runId: string;
  launch: number;
  nodeId?: string;
  attempt?: number;
  pauseId?: string;
  /** `approved` or `feedback` on APPROVAL_ANSWERED. */
  decision?: 'approved' | 'feedback';
  exitCode?: number | null;
  /** At most 500 characters; the full error is on the node or the run. */
  error?: string;
}

/** Frames of the `ops` stream (key = op id). `OP_LOG` / `OP_PROGRESS` / `OP_STEERED` carry their small body. */
export const opFrameTypes = ['OP_STARTED', 'OP_LOG', 'OP_PROGRESS', 'OP_STEERED', 'OP_SUCCEEDED', 'OP_FAILED', 'OP_CANCELLED'] as const;
export type OpFrameType = (typeof opFrameTypes)[number];

export interface OpFramePayload {
  opId: string;
  /** OP_LOG: one line, at most 4,096 characters. */
  line?: string;
  /** OP_PROGRESS: 0 to 1. */
  fraction?: number;
  /** OP_PROGRESS: at most 500 characters. */
  message?: string;
  /** OP_STEERED: the operator's note (at most 16 KiB). */
  note?: string;
  /** OP_FAILED / OP_CANCELLED: at most 500 characters. */
  error?: string;
}

/** Limits the seed gives runs and their gates. */
export const runLimits = {
  /** Longest approval answer, in UTF-8 bytes. */
  answerBytes: 16 * 1024,
  /** Files a gate's artifacts carry, and characters of each. */
  artifactFiles: 4,
  artifactChars: 32_000,
  /** Bytes of a node's output kept in Postgres (the tail; `outputTruncated` says when cut). */
  outputBytes: 64 * 1024,
  /** Longest op log line and steer note. */
  opLineChars: 4096,
  steerNoteBytes: 16 * 1024,
  /** Steers one op accepts in its life; more are rejected (the op's history stays bounded). */
  steersPerOp: 500,
  /** Accepted steers not yet recorded as frames; a flood beyond this is rejected until they are. */
  steersPending: 8,
  /** Characters of a caller's steer key (the Temporal update id that deduplicates it). */
  steerKeyChars: 128,
  /** Bytes of an op's JSON result kept. */
  opResultBytes: 256 * 1024,
  /** Bytes of one run input value. */
  inputBytes: 64 * 1024,
} as const;

/**
 * Temporal message names of the run workflows (see schema/PROTOCOL.md "Run workflows: signals,
 * updates, queries").
 */
export const runMessages = {
  /** Update on `dagRun`: answer an approval gate. Validated; returns ok or rejects with a reason. */
  respond: 'respond',
  /** Query on `dagRun`: live status. */
  status: 'status',
  /** Signal on `dagRun`, `durableOp` and `ribOp`, sent just before a cancel request: who cancels (the CANCELLED frame's actor). */
  cancelledBy: 'cancelledBy',
  /** Update on `dagRun`: a steer note for a running prompt node, read between its tool rounds (`steerRun`). */
  steerNode: 'steerNode',
  /** Query on `dagRun`: the steer notes a node was sent, in order (its activity reads them). */
  nodeSteerNotes: 'nodeSteerNotes',
} as const;

/** `steerNode`'s argument. */
export interface NodeSteerArgs {
  nodeId: string;
  note: string;
}

/** The longest steer note of a prompt node. */
export const NODE_STEER_MAX_CHARS = 4000;

export const opMessages = {
  /** Signal on `durableOp`/`ribOp`: a steering note for the running op (kept for older callers; unanswered). */
  steer: 'steer',
  /** Update on `durableOp`/`ribOp`: a steering note, validated (rejected once the op is finishing, over its caps); the update id deduplicates. */
  steerNote: 'steerNote',
  /** Signal from an op's work child (`opWork`) to its op workflow: the work ended, with its outcome. */
  workDone: 'opWorkDone',
  /** Query on `durableOp`: live status. */
  status: 'status',
} as const;

/** The `respond` Update's argument. */
export interface RespondInput {
  nodeId: string;
  text: string;
  /** The pause being answered; absent means "the gate of nodeId open now". */
  pauseId?: string;
  /** Who answers (recorded on APPROVAL_ANSWERED); a subject and kind, never a credential. */
  actor?: Actor;
}

/** The `respond` Update's result (a rejection is an Update failure with the reason). */
export interface RespondResult {
  ok: true;
  pauseId: string;
  decision: 'approved' | 'feedback';
  /** True when this exact answer had already been recorded for the pause. */
  duplicate: boolean;
}

/** The `status` Query's answer on `dagRun`. */
export interface DagRunStatus {
  runId: string;
  launch: number;
  /** Node id → status as the workflow knows it. */
  nodes: Record<string, RunNodeStatus>;
  openGates: { nodeId: string; pauseId: string }[];
  /** Set once the run stopped scheduling (failing, cancelling, finishing). */
  closing: boolean;
}

/** The `steerNote` Update's result (a rejection is an Update failure whose type is an error code). */
export interface OpSteerResult {
  /** The steer's place among the op's steers (its `OP_STEERED` frame's `index`). */
  index: number;
  /** True when this caller key had already been accepted (nothing new was queued). */
  duplicate: boolean;
}

/** How an op's work child (`opWork`) ended, signalled to its op workflow. */
export type OpWorkOutcome =
  | { outcome: 'SUCCEEDED' }
  | { outcome: 'CANCELLED' }
  | { outcome: 'FAILED'; message: string; type: string };

/** The `status` Query's answer on `durableOp`. */
export interface DurableOpStatus {
  opId: string;
  /** RUNNING until the op settles. */
  status: RunStatus;
  steersReceived: number;
  steersDelivered: number;
}
