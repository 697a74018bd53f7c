import type { RibApprovalDecision, ApprovalRequest } from '@keelson/ribs-contract';

/**
 * Where a policy `ask` goes to be answered by a human. The runs issue implements it (a pending
 * approval surfaced to clients and completed by a mutation); `createApprovalQueue()` is the
 * in-memory one. Aborting `signal` (timeout, caller cancellation) must settle as `reject`. A port
 * with an inbox calls `opened` with the approval's inbox id once a human can answer it.
 */
export interface ApprovalPort {
  request(req: ApprovalRequest, signal?: AbortSignal, opened?: (approvalId: string) => Promise<void>): Promise<RibApprovalDecision>;
}
