export { startMesh, supergraphPath } from './startMesh';
export type { MeshOptions, RunningMesh } from './startMesh';
export { ensureDatabase } from './database';
export { composeSupergraph } from './compose';
export type { Composition } from './compose';
export { subgraphs, defaultSubgraphUrl } from './subgraphs';
export { runsPortOf, ribWorkflowSource } from './ribRuns';
