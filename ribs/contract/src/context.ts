import type { RibAgentTurn, RibAgentTurnRequest } from './agentTurn';
import type { CallToolOptions, CallToolResult, ToolReachability } from './crossRib';
import type { RibExec } from './exec';
import type { MemoryTools } from './memory';
import type { OpHandle, RegisterOpRequest } from './ops';
import type {
  AcquireMutationLockRequest,
  AcquireWorkspaceRequest,
  CloneProjectBody,
  CreateProjectBody,
  MutationLock,
  Project,
  WorkspaceLease,
} from './projects';
import type { RibProviderInfo } from './providers';
import type { CancelRunResult, RespondToRunResult, RibRunStatus } from './runs';
import type { SnapshotManager } from './snapshots';
import type { RibSurfaceRegion } from './surfaces';
import type { RibWorkflowRunResult, RunWorkflowOptions, StartWorkflowOptions } from './workflows';

/**
 * The rib's scoped data layer, injected into every hook. Every accessor except `getExec` is
 * optional, so a minimal test context satisfies the interface; a rib that needs an absent accessor
 * fails closed (an older host simply does not offer it).
 */
export interface RibContext {
  /** Process execution (`runJSON` / `runText`). Always present. */
  getExec(): RibExec;
  /** Register, recompose, publish and read snapshot keys in this rib's namespace. */
  getSnapshotManager?(): SnapshotManager;
  /** Read-only: the secret stored under `rib_<id>_<serviceId>`. Another rib's secrets are unreachable. */
  getCredential?(serviceId: string): Promise<string | undefined>;
  /** `<home>/rib-<id>`, path only: the rib creates it when it writes. */
  getDataDir?(): string;
  /** The operator's projects at call time (read-only). */
  getProjects?(): readonly Project[];
  /** Creates or registers a project; rejects with `ProjectOperationError`. */
  createProject?(body: CreateProjectBody): Promise<Project>;
  /** Clones beneath the workspace root and registers; rejects with `ProjectOperationError`. */
  cloneProject?(body: CloneProjectBody): Promise<Project>;
  /** An isolated checkout lease; release it in a `finally`. */
  acquireWorkspace?(req: AcquireWorkspaceRequest): Promise<WorkspaceLease>;
  /** The advisory lock before mutating a live checkout; a second holder fails fast naming the first. */
  acquireMutationLock?(req: AcquireMutationLockRequest): Promise<MutationLock>;
  /**
   * A governed call of a sibling rib's tool: denied without an operator grant, resolves
   * `{ ok: false }` instead of throwing, bounded by `KEELSON_CROSS_RIB_CALL_TIMEOUT_MS`.
   */
  callTool?(targetRibId: string, name: string, args: unknown, opts?: CallToolOptions): Promise<CallToolResult>;
  /** Pre-flight of the operator floor (registration, grants, denylist); synchronous and non-throwing. */
  getToolReachability?(names: readonly string[]): readonly ToolReachability[];
  /** Adds a region to one of this rib's surfaces at runtime; returns its unregister handle. */
  registerRegion?(surfaceId: string, region: RibSurfaceRegion): () => void;
  /** Nudges clients to re-fetch the manifest; call it only when a descriptor really changed. */
  invalidateManifest?(): void;
  /** One agent turn through the provider registry, policies included. */
  runAgentTurn?(req: RibAgentTurnRequest): RibAgentTurn;
  /** Re-runs one of this rib's snapshot-bound producer workflows; never throws. */
  refreshWorkflow?(workflowName: string, inputs?: Record<string, string>): Promise<void>;
  /** Runs an in-memory workflow definition on the shared executor; never throws. */
  runWorkflow?(definition: unknown, inputs?: Record<string, string>, opts?: RunWorkflowOptions): Promise<RibWorkflowRunResult>;
  /** Starts a granted catalog workflow and resolves with its run id once registered. */
  startWorkflow?(name: string, inputs?: Record<string, string>, opts?: StartWorkflowOptions): Promise<{ runId: string }>;
  /** Status of a run this rib started or owns; undefined for any other run. */
  getRunStatus?(runId: string): Promise<RibRunStatus | undefined>;
  /** Cancels a live run this rib started. */
  cancelRun?(runId: string): Promise<CancelRunResult>;
  /** Answers a granted approval gate on a paused run this rib started. */
  respondToRun?(runId: string, nodeId: string, text: string, pauseId?: string): Promise<RespondToRunResult>;
  /** The governed memory ledger. */
  getMemory?(): MemoryTools;
  /** Registers a durable long-running op; the handle returns synchronously. */
  registerOp?(req: RegisterOpRequest): OpHandle;
  /** The providers registered at call time. */
  getProviders?(): readonly RibProviderInfo[];
  /** An opaque resolver each rib narrows at its own edge. */
  getSidecar?(): Promise<unknown> | unknown;
}
