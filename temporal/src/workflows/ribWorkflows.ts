// The rib host's workflows: durable rib ops and region refresh heartbeats.
export { ribOp } from './ribOp';
export type { RibOpInput, RibOpResult } from './ribOp';
export { regionRefresh } from './regionRefresh';
export type { RegionRefreshInput, RegionRefreshResult } from './regionRefresh';
