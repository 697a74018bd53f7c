import type { SnapshotValidator } from './snapshots';

/**
 * A workflow a rib contributes to the catalog at activation. `definition` stays unknown here: the
 * workflow loader validates it when it merges. With `bindSnapshotKey` (in the rib's namespace) the
 * run's structured output republishes to that key, through `validate` first (fail-closed).
 */
export interface RibWorkflowContribution {
  definition: unknown;
  bindSnapshotKey?: string;
  validate?: SnapshotValidator;
}

/** The terminal result of `RibContext.runWorkflow`; never a throw. */
export interface RibWorkflowRunResult {
  status: 'succeeded' | 'failed' | 'cancelled';
  nodes: Record<string, { state: string; output: string; error?: string }>;
  error?: string;
}

/** Options of `RibContext.runWorkflow`. */
export interface RunWorkflowOptions {
  /** The working directory. @default the keelson home */
  cwd?: string;
}

/** Options of `RibContext.startWorkflow`. */
export interface StartWorkflowOptions {
  /** A registered project: the run resolves its workflow scope and runs at its root. */
  projectId?: string;
}
