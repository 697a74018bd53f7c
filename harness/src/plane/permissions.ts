import { randomBytes } from 'node:crypto';
import { MeshError } from '@keelson/schema';
import type { Logger } from '@keelson/service';
import type { HarnessEvents } from './events';
import type { HarnessStore } from './store';

/** The request id of an approval asked before a tool runs: `live:<the CLI's tool_use_id>`. */
export const LIVE_APPROVAL_PREFIX = 'live:';

/** What the CLI asks: the tool, its input, the call's id. */
export interface PermissionAsk {
  toolName: string;
  input: unknown;
  toolUseId: string;
}

/** The hook's answer, in the shape claude-code's `--permission-prompt-tool` takes. */
export type PermissionAnswer = { behavior: 'allow'; updatedInput: Record<string, unknown> } | { behavior: 'deny'; message: string };

interface LiveTurn {
  sessionId: string;
  turnId: string;
}

/**
 * Approvals asked before a tool runs (claude-code's `--permission-prompt-tool`): each turn of a CLI
 * with a permission hook gets a secret; the CLI's call to the mesh's permission endpoint, naming the
 * secret, opens an approval in the inbox (`live:<tool_use_id>`, a HARNESS_TOOL) and blocks until it
 * is answered — APPROVE lets the tool run in this turn, DENY keeps it from running. The answer is read
 * from the session's `harness` stream (APPROVAL_RESOLVED), so any replica may take it.
 */
export class PermissionGate {
  private readonly live = new Map<string, LiveTurn>();
  /** The endpoint the CLIs call, once this process serves it. */
  url: string | null = null;

  constructor(private readonly deps: { store: HarnessStore; events: HarnessEvents; log: Logger }) {}

  /** A turn's secret, valid until `close()` (the turn settled). */
  open(sessionId: string, turnId: string): { secret: string; close(): void } {
    const secret = randomBytes(32).toString('base64url');
    this.live.set(secret, { sessionId, turnId });
    return { secret, close: () => this.live.delete(secret) };
  }

  /** Whether a running turn holds this secret. */
  holds(secret: string): boolean {
    return this.live.has(secret);
  }

  /** Opens the approval and waits for its answer (or for `signal`: the CLI gave up, or the turn ended). */
  async decide(secret: string, ask: PermissionAsk, signal: AbortSignal): Promise<PermissionAnswer> {
    const turn = this.live.get(secret);
    if (!turn) throw new MeshError('UNAUTHENTICATED', 'no running turn holds this permission secret');
    const requestId = `${LIVE_APPROVAL_PREFIX}${ask.toolUseId}`;
    await this.deps.store.requestApprovals(turn.sessionId, turn.turnId, [
      { requestId, toolName: ask.toolName, input: ask.input, reason: `${ask.toolName} needs approval before it runs; the turn waits for the answer` },
    ]);
    const decision = await this.answerOf(turn.sessionId, requestId, signal);
    if (decision === 'APPROVE') return { behavior: 'allow', updatedInput: (ask.input && typeof ask.input === 'object' ? ask.input : {}) as Record<string, unknown> };
    return { behavior: 'deny', message: `The user denied ${ask.toolName}. Do not run it; go on without it.` };
  }

  /** The answer of one approval, from the session's stream (replayed from its start, then followed). */
  private async answerOf(sessionId: string, requestId: string, signal: AbortSignal): Promise<'APPROVE' | 'DENY'> {
    const tail = await this.deps.events.tail({ sessionId }, null);
    const stop = () => void tail.return?.();
    signal.addEventListener('abort', stop, { once: true });
    try {
      for await (const e of tail) {
        if (e.type === 'APPROVAL_RESOLVED' && e.payload.requestId === requestId) return e.payload.decision === 'APPROVE' ? 'APPROVE' : 'DENY';
      }
      throw new MeshError('CONFLICT', `the wait for approval ${requestId} ended unanswered`);
    } finally {
      signal.removeEventListener('abort', stop);
      await tail.return?.();
    }
  }
}
