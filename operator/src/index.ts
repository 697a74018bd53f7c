export { ApprovalLedger, ApprovalReader } from './approvals';
export type { ApprovalRecord, OpenApproval } from './approvals';
export { OperatorApprovals1764460800600 } from './operator.migration';
export { CapabilityWatcher } from './capabilities';
export type { CapabilityObservation, CapabilityWatcherOptions } from './capabilities';
