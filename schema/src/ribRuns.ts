/**
 * Names and shapes shared by the rib host's run seams, the `ribOp` / `regionRefresh` workflows and
 * the process that hosts the ribs (schema/PROTOCOL.md "Rib run seams and ops"). Pure: the workflow
 * sandbox imports it.
 */

/** Temporal messages of `regionRefresh`. */
export const refreshMessages = {
  /** Signal: a ribs process (re)attaches as the region's holder, with the intervals and whether the key is live there. */
  attach: 'attach',
  /** Signal: the key's live-subscriber state changed in the holder process. */
  live: 'live',
  /** Signal: the holder stops (orderly shutdown or the region was unregistered); the heartbeat ends. */
  detach: 'detach',
  /** Query: the heartbeat's state. */
  status: 'status',
} as const;

/** `attach` signal argument. */
export interface RefreshAttach {
  /** The holder process's own task queue (`refreshRegion` runs there). */
  holderTaskQueue: string;
  liveIntervalMs: number;
  idleIntervalMs: number;
  /** The key has a live `snapshotFrames` subscriber in the holder now. */
  live: boolean;
}

/** `live` signal argument. */
export interface RefreshLive {
  holderTaskQueue: string;
  live: boolean;
}

/** `detach` signal argument: ignored unless it names the current holder. */
export interface RefreshDetach {
  holderTaskQueue: string;
}

/** `status` query answer. */
export interface RegionRefreshStatus {
  key: string;
  holderTaskQueue: string;
  live: boolean;
  /** The interval in force: the live one while the key has a subscriber, else the idle one. */
  intervalMs: number;
  refreshes: number;
  failures: number;
  /** Workflow time (epoch ms) of the last refresh, or of the start before the first. */
  lastRefreshAt: number;
}

/** What the holder answers after one refresh. */
export interface RefreshOutcome {
  /** The key has a live subscriber in the holder (corrects a missed `live` signal). */
  live: boolean;
  /** The holder no longer declares the region: the heartbeat ends. */
  gone: boolean;
}

/** Why a rib op ended FAILED when its registering process went away. */
export const HOLDER_STOPPED = 'registering process stopped';

/** The workflow name of the runs a policy `ask` opens (one approval node). */
export const POLICY_APPROVAL_WORKFLOW = 'policy-approval';
/** Its one node: answer it with `respondToRun(runId, "approve", "approve" | feedback, pauseId)`. */
export const POLICY_APPROVAL_NODE = 'approve';
