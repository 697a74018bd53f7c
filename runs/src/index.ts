export { RunStore } from './store/runStore';
export { whenValue } from './store/runRecords';
export type { NewRun, RunRecord, NodeRecord, RunCheckoutRecord, CapturedOutput, LaunchNodeState } from './store/runRecords';
export { OpStore } from './store/opStore';
export type { NewOp, OpRecord } from './store/opStore';
export { runsMigrations, RUNS_MIGRATIONS_TABLE, RunsTables1764460800300, RunNodePrompt1764460800330 } from './migrations';
export { projectsGraphqlApi } from './projects';
export type { ProjectsApi, ProjectRef, WorkspaceRef } from './projects';
