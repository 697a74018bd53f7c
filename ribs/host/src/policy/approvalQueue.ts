import { randomUUID } from 'node:crypto';
import type { RibApprovalDecision, ApprovalRequest } from '@keelson/ribs-contract';
import type { ApprovalPort } from '../ports/approvalPort';

/** An approval waiting for a human. */
export interface PendingApproval extends ApprovalRequest {
  id: string;
  /** ISO-8601. */
  createdAt: string;
}

/** An in-memory `ApprovalPort` whose pending decisions are listed and completed by id. */
export interface ApprovalQueue extends ApprovalPort {
  pending(): PendingApproval[];
  /** Completes a pending approval; false when it is unknown or already settled. */
  resolve(id: string, decision: RibApprovalDecision): boolean;
  /** Called for every new pending approval; returns an unsubscribe. */
  onPending(listener: (approval: PendingApproval) => void): () => void;
}

/** Options of `createApprovalQueue`. */
export interface ApprovalQueueOptions {
  /** An unanswered approval rejects after this long. @default 300000 */
  timeoutMs?: number;
}

/**
 * The hook the runs issue completes: each `ask` becomes a pending approval until `resolve`, a
 * timeout or the caller's abort settles it (the latter two as `reject`).
 */
export function createApprovalQueue(options: ApprovalQueueOptions = {}): ApprovalQueue {
  const timeoutMs = options.timeoutMs ?? 300_000;
  const waiting = new Map<string, { approval: PendingApproval; settle: (d: RibApprovalDecision) => void }>();
  const listeners = new Set<(approval: PendingApproval) => void>();
  return {
    request(req, signal, opened) {
      return new Promise<RibApprovalDecision>((resolve) => {
        if (signal?.aborted) return resolve('reject');
        const approval: PendingApproval = { ...req, id: randomUUID(), createdAt: new Date().toISOString() };
        const timer = setTimeout(() => settle('reject'), timeoutMs);
        const onAbort = () => settle('reject');
        // The decision is handed back only after the opener heard of the approval.
        let told: Promise<void> = Promise.resolve();
        function settle(decision: RibApprovalDecision) {
          if (!waiting.delete(approval.id)) return;
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          void told.then(() => resolve(decision));
        }
        signal?.addEventListener('abort', onAbort, { once: true });
        waiting.set(approval.id, { approval, settle });
        if (opened) told = opened(approval.id).catch(() => undefined);
        for (const listener of listeners) listener(approval);
      });
    },
    pending: () => [...waiting.values()].map((w) => w.approval),
    resolve(id, decision) {
      const entry = waiting.get(id);
      if (!entry) return false;
      entry.settle(decision);
      return true;
    },
    onPending(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
