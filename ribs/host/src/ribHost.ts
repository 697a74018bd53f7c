import type { AuditSink } from '@keelson/platform';
import type { ProcessSandbox } from '@keelson/platform';
import type { Logger } from '@keelson/service';
import type {
  AgentRef,
  MemoryTools,
  CallToolOptions,
  CallToolResult,
  CommandCompletion,
  CommandInvokeResult,
  CommandRef,
  CrossRibGrantsMap,
  OpenChatSeed,
  Policy,
  RegisteredToolInfo,
  Rib,
  RibActionResult,
  RibAuthStatus,
  RibBannerRegion,
  RibContext,
  RibExec,
  RibRunEvent,
  RibSummary,
  RibSurfaceRegion,
  ToolDefinition,
  ToolReachability,
} from '@keelson/ribs-contract';
import type { ConfigPort } from './config/configPort';
import type { RibRunSeams } from './context/buildRibContext';
import type { DocsCatalog, FetchText } from './docs/docsCatalog';
import type { ManifestListener } from './manifest/manifestEvents';
import type { PolicyEngine } from './policy/policyEngine';
import type { ApprovalPort } from './ports/approvalPort';
import type { CredentialStore } from './ports/credentialStore';
import type { ProjectsPort } from './ports/projectsPort';
import type { SnapshotRecord, SnapshotStore } from './ports/snapshotStore';
import type { SnapshotOutcome } from './snapshots/snapshotHub';
import type { ToolRunOutcome, ToolRunRequest } from './tools/toolRunner';
import type { RibWarning } from './warnings';
import type { RibWorkflowEntry } from './workflows/workflowCatalog';

/** Options of `createRibHost`. Every port is optional: an absent one leaves its seams off the contexts. */
export interface RibHostOptions {
  /** Where every tool call this host runs is recorded (the process's `AuditLog`). */
  audit?: AuditSink;
  /**
   * Seed 000's MemoryTools for a rib (over the memory subgraph): given, the host registers the
   * `memory_recall` and `memory_write` tools (a prompt node's `allowed_tools` may name them) and
   * every rib's context gets `getMemory` unless its seams bring one.
   */
  memory?: (ribId: string) => MemoryTools;
  /**
   * An explicit manifest, key → rib (the path tests and embedders use). Given, discovery is skipped
   * unless `discover` is true; its entries pass the same shape checks as discovered packages.
   */
  available?: Readonly<Record<string, unknown>>;
  /** Scan `node_modules/@keelson/rib-*`. @default true without `available`, false with it */
  discover?: boolean;
  /** Where to scan. @default the `node_modules` folders Node resolves `@keelson/*` from */
  nodeModulesRoots?: readonly string[];
  /** Read once: KEELSON_RIBS, KEELSON_CROSS_RIB_GRANTS, KEELSON_CROSS_RIB_CALL_TIMEOUT_MS, KEELSON_RIB_*_GRANTS, KEELSON_HOME, KEELSON_SANDBOX. @default process.env */
  env?: Record<string, string | undefined>;
  /** The keelson home (rib data dirs, the config file). @default KEELSON_HOME, else ~/.keelson */
  home?: string;
  /**
   * The bubblewrap sandbox every `Bash` call runs in (see `@keelson/platform` createSandbox).
   * @default createSandbox({ mode: KEELSON_SANDBOX, hidden: [home] }), warning through the logger when off
   */
  sandbox?: ProcessSandbox;
  /** @default createLogger('rib-host') */
  logger?: Logger;
  /** Sees every warning (discovery skips, dropped descriptors, tool collisions, …). */
  onWarning?: (warning: RibWarning) => void;
  /** Persists and publishes snapshot versions. @default an in-memory store */
  snapshotStore?: SnapshotStore;
  /** Backs `getCredential`. */
  credentials?: CredentialStore;
  /** Backs `getProjects` / `createProject` / `cloneProject` / `acquireWorkspace` / `acquireMutationLock`. */
  projects?: ProjectsPort;
  /** The operator's config file. @default `<home>/config.json` (or `.yaml` / `.yml`) */
  config?: ConfigPort;
  /** Backs `getExec`. @default child_process, killed at dispose */
  exec?: RibExec;
  /** Answers policy `ask`s; absent, an ask reads as deny with its reason. */
  approvals?: ApprovalPort;
  /** More host policies (ids `builtin:<name>`), after `builtin:path_confinement`. */
  builtinPolicies?: readonly Policy[];
  /** Fetches `llmsFullUrl` docs corpora. @default fetch with a 15 s timeout */
  fetchText?: FetchText;
  /** The run seams (runAgentTurn, startWorkflow, registerOp, …) the runs issue plugs in per rib. */
  seams?: (ribId: string) => Partial<RibRunSeams>;
  /**
   * Tools of the host itself (like `keelson_docs`, e.g. the `run_*` family), registered before any
   * rib's so no rib can claim their names. A malformed or colliding one fails the boot.
   */
  hostTools?: readonly ToolDefinition[];
  /** How long an `authStatus` probe may take. @default 10000 */
  authProbeTimeoutMs?: number;
}

/** A rib found at discovery, active or filtered out. */
export interface InstalledRib {
  id: string;
  source: 'discovered' | 'available';
  active: boolean;
  packageName?: string;
  packageDir?: string;
}

/** The manifest: active ribs, re-validated per call, and the grant map in force (`{}` when there are none). */
export interface RibManifest {
  ribs: RibSummary[];
  crossRibGrants: CrossRibGrantsMap;
}

/** A region of a surface, for refresh scheduling: declared at activation, or added at runtime. */
export interface SurfaceRegionRef {
  ribId: string;
  surfaceId: string;
  slot: 'header' | 'banner' | 'row' | 'footer';
  region: RibSurfaceRegion | RibBannerRegion;
  dynamic: boolean;
}

/** The operator grants in force. */
export interface HostGrants {
  /** The cross-rib grant map, as the manifest reports it. */
  crossRib(): CrossRibGrantsMap;
  /** `ribWorkflowGrants` ∪ `KEELSON_RIB_WORKFLOW_GRANTS`: may `ribId` start `workflowName`? */
  canStartWorkflow(ribId: string, workflowName: string): boolean;
  /** `ribApprovalGrants` ∪ `KEELSON_RIB_APPROVAL_GRANTS`: may `ribId` answer `workflowName`'s gates? */
  canAnswerGates(ribId: string, workflowName: string): boolean;
  /** `KEELSON_CROSS_RIB_CALL_TIMEOUT_MS`. */
  readonly callTimeoutMs: number;
}

/**
 * The rib host: what the ribs subgraph (and the worker) call. Methods taking a `ribId` reject with
 * `MeshError('NOT_FOUND')` for a rib that is not active, with `BAD_USER_INPUT` for malformed input,
 * and with `CAPABILITY_UNSUPPORTED` when the rib lacks the hook (`onAction`, `acceptsIngest`).
 */
export interface RibHost {
  /** Active rib ids, in activation order. */
  readonly ribIds: readonly string[];
  /** Every rib discovery found, with whether it is active (installed ≠ active). */
  installed(): readonly InstalledRib[];
  rib(id: string): Rib | undefined;
  /** The context a rib's hooks receive (for the worker running its tools and ops). */
  context(id: string): RibContext | undefined;

  /** Active ribs with views and surfaces re-validated now (bad ones dropped and warned) and auth probed. */
  manifest(): Promise<RibManifest>;
  ribSummary(id: string): Promise<RibSummary | undefined>;
  /** Fires for `registerRegion`, its unregister handle, and `invalidateManifest`. */
  onManifestInvalidated(listener: ManifestListener): () => void;
  /** Every region, declared and runtime-added (the refresh heartbeat's input). */
  surfaceRegions(): SurfaceRegionRef[];

  /** `onAction` with origin `board` (trusted host UI). */
  ribAction(ribId: string, type: string, payload?: unknown): Promise<RibActionResult>;
  /** `onAction` with origin `canvas-html`; the reply may carry only open-canvas / open-chat. */
  canvasAction(ribId: string, type: string, payload?: unknown): Promise<RibActionResult>;
  /** The `ingest` action for a rib with `acceptsIngest`; the payload is capped and validated. */
  ingest(ribId: string, payload: { text: string; sourceConversationId?: string }): Promise<RibActionResult>;

  /** Named agents of every rib (or one). */
  agents(ribId?: string): Promise<AgentRef[]>;
  resolveAgent(ribId: string, slug: string): Promise<OpenChatSeed | null>;
  /** Slash commands of every rib (or one). */
  commands(ribId?: string): Promise<CommandRef[]>;
  /** Resolves the closed effect; never a throw for a rib failure. */
  invokeCommand(ribId: string, name: string, arg: string): Promise<CommandInvokeResult>;
  /** Argument candidates (the full set for an empty prefix). */
  completeCommand(ribId: string, name: string, prefix: string): Promise<CommandCompletion[]>;
  /** Undefined when the rib declares no probe; a throwing probe reads as unauthenticated. */
  authStatus(ribId: string): Promise<RibAuthStatus | undefined>;

  /** The shared tool registry, in registration order (`keelson_docs` and the built-in coding tools first). */
  tools(): RegisteredToolInfo[];
  tool(name: string): RegisteredToolInfo | undefined;
  /** A registered tool's input as JSON Schema (what a provider advertises to the model); undefined when unknown. */
  toolInputSchema(name: string): Record<string, unknown> | undefined;
  /** Runs a tool through input parsing, the policy engine and abort handling. */
  executeTool(req: ToolRunRequest): Promise<ToolRunOutcome>;
  /** A governed cross-rib call on behalf of `callerRibId`. */
  callTool(callerRibId: string, targetRibId: string, name: string, args: unknown, opts?: CallToolOptions): Promise<CallToolResult>;
  /** The operator floor for names a rib's turn carries. */
  toolReachability(ribId: string, names: readonly string[]): ToolReachability[];

  /** Composes a registered key now and publishes a new version. */
  recomposeSnapshot(key: string): Promise<SnapshotOutcome>;
  /** The latest version of any key. */
  readSnapshot(key: string): Promise<SnapshotRecord | undefined>;
  /** Keys with a registered composer. */
  snapshotKeys(): string[];
  /** Settles when every warm-up recompose asked for during activation has settled. */
  whenWarm(): Promise<void>;

  /** The docs catalog behind `keelson_docs`. */
  readonly docs: DocsCatalog;
  /** The one policy engine (builtins, then rib policies). */
  readonly policies: PolicyEngine;
  readonly grants: HostGrants;
  /** Rib workflows (code and YAML), merged; executing them is the runs issue's. */
  workflows(): readonly RibWorkflowEntry[];
  /** Delivers a run event to a rib's `onRunEvent`: serialized per run, fail-soft. */
  deliverRunEvent(ribId: string, event: RibRunEvent): Promise<void>;

  /** Awaits every rib's `dispose` (reverse activation order) and kills running processes. Idempotent. */
  dispose(): Promise<void>;
}
