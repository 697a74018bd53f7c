// @keelson/host: discovery, validation, activation, the tool registry, the snapshot manager
// and the RibContext seams. The ribs subgraph and the worker call `createRibHost`.
export { createRibHost } from './createRibHost';
export type { RibHost, RibHostOptions, RibManifest, InstalledRib, SurfaceRegionRef, HostGrants } from './ribHost';
export { RibActivationError } from './errors';
export type { RibWarning, RibWarningStage, WarningSink } from './warnings';
export { createWarningSink } from './warnings';

// Ports the embedder implements, and their in-memory implementations.
export type { SnapshotStore, SnapshotRecord, SnapshotAppend } from './ports/snapshotStore';
export type { CredentialStore } from './ports/credentialStore';
export type { ProjectsPort } from './ports/projectsPort';
export { projectsSubgraphClient, type ProjectsSubgraphClient } from './ports/projectsClient';
export type { ApprovalPort } from './ports/approvalPort';
export type { ConfigPort } from './config/configPort';
export { InMemorySnapshotStore } from './memory/inMemorySnapshotStore';
export { createApprovalQueue } from './policy/approvalQueue';
export type { ApprovalQueue, ApprovalQueueOptions, PendingApproval } from './policy/approvalQueue';

// Config: the file loader, its schema, the env variables and the grant unions.
export { keelsonConfigSchema } from './config/keelsonConfig';
export type { KeelsonConfig } from './config/keelsonConfig';
export { fileConfigPort, readConfigFile, CONFIG_FILE_NAMES } from './config/fileConfigPort';
export type { ConfigFileRead } from './config/fileConfigPort';
export { UnresolvedConfigVariableError } from './config/envRefs';
export { parseHostEnv, DEFAULT_CROSS_RIB_CALL_TIMEOUT_MS } from './config/hostEnv';
export type { HostEnv } from './config/hostEnv';
export {
  parseCrossRibGrantsEnv,
  resolveCrossRibGrants,
  isCrossRibCallGranted,
  serializeCrossRibGrants,
  parseRibWorkflowGrantsEnv,
  resolveRibWorkflowGrants,
  isRibWorkflowGranted,
} from './config/grants';
export type { CrossRibGrants, RibWorkflowGrants } from './config/grants';

// Building blocks the subgraph and the runs issue reuse.
export type { RibRunSeams } from './context/buildRibContext';
export { createExec } from './exec/createExec';
export type { ExecOptions } from './exec/createExec';
export { credentialAccount, credentialServiceIdSchema } from './credentials/credentialSeam';
export { toProjectOperationError } from './projects/projectSeams';
export type { SnapshotOutcome } from './snapshots/snapshotHub';
export type { ToolRunRequest, ToolRunOutcome, ToolRunStatus } from './tools/toolRunner';
export { KEELSON_DOCS_TOOL } from './docs/keelsonDocsTool';
export { BUILTIN_CODING_TOOLS, isBuiltinCodingTool, codingTools } from './builtins/codingTools';
export { DocsCatalog, splitH1Topics, DOCS_TOPIC_MAX_CHARS, PREAMBLE_TOPIC } from './docs/docsCatalog';
export type { DocsSourceInfo, DocsTopic, FetchText } from './docs/docsCatalog';
export { PolicyEngine } from './policy/policyEngine';
export type { EngineDecision, RegisteredPolicy } from './policy/policyEngine';
export { pathConfinementPolicy, PATH_CONFINEMENT_POLICY_ID, shellPathTokens } from './policy/pathConfinement';
export type { ManifestInvalidation, ManifestListener } from './manifest/manifestEvents';
export type { RibWorkflowEntry } from './workflows/workflowCatalog';
export { RIB_WORKFLOWS_DIR } from './discovery/loadWorkflowFiles';
export { AUTH_PROBE_TIMEOUT_MS } from './hooks/authStatus';

// The run seams (runs issue): ports the embedder implements and the pieces that serve them.
export { createRibRuns } from './runs/ribRuns';
export type { RibRuns, RibRunsOptions, RegionRefreshRequest } from './runs/ribRuns';
export type { RunsPort, RunsPortRun, RunsPortNode, RunsPortOp, RunsPortEvent, RunsPortAnswer, RunsPortStatus } from './runs/runsPort';
export { LiveOps } from './runs/liveOps';
export type { OpsPort, NewRibOp, LiveOp, LiveOpOutcome } from './runs/liveOps';
export { RunEventRouter, isLifecycleEvent } from './runs/runEventRouter';
export type { RunStreamEvent } from './runs/runEventRouter';
export { BoundOutputs, runOutput } from './runs/boundOutputs';
export { createRunSeams, ribRunStatus, ribWorkflowRunResult } from './runs/runSeams';
export type { RunSeamsDeps } from './runs/runSeams';
export { runApprovalPort, approvalPrompt } from './runs/runApprovals';
export type { RunApprovalOptions } from './runs/runApprovals';
export { runTools, RUN_TOOL_NAMES } from './runs/runTools';
export { graphqlMemoryTools, memoryKinds } from './memory/graphqlMemoryTools';
export { memoryTools, MEMORY_RECALL_TOOL, MEMORY_WRITE_TOOL, WORKFLOW_MEMORY_OWNER } from './builtins/memoryTools';
