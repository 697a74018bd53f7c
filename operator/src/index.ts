export { ApprovalLedger, ApprovalReader } from './approvals';
export type { ApprovalRecord, OpenApproval } from './approvals';
export { OperatorApprovals1764460800600 } from './operator.migration';
export { CapabilityWatcher, singleCapabilityWatcher } from './capabilities';
export type { CapabilityObservation, CapabilityWatcherOptions } from './capabilities';
