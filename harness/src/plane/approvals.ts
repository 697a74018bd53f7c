import { MeshError, type ApprovalDecision } from '@keelson/schema';
import type { Places } from './places';
import type { SessionView } from './sessions';
import { LIVE_APPROVAL_PREFIX } from './permissions';
import { HOST, type HarnessStore } from './store';
import type { Turns } from './turn';

export interface ApprovalsDeps {
  store: HarnessStore;
  places: Places;
  turns: Turns;
}

/** Approvals: the permission requests a CLI reported, answered by the session's owner. */
export class Approvals {
  constructor(private readonly deps: ApprovalsDeps) {}

  /**
   * Answers a permission request. One asked before the tool ran (`live:…`, a CLI with a permission
   * hook) is answered to the waiting turn: APPROVE lets the tool run, DENY keeps it from running.
   * One the CLI reported after the fact: APPROVE re-runs the session with the tool
   * allowed for that turn and tells the CLI to retry it; DENY records the answer (the CLI already
   * went on without the tool).
   */
  async resolve(view: SessionView, requestId: string, decision: ApprovalDecision): Promise<boolean> {
    const { store, places, turns } = this.deps;
    const record = view.record;
    if (!record) throw new MeshError('NOT_FOUND', `session ${view.id} has no approval request ${requestId}`);
    const pending = (await store.approvals(record.id)).find((a) => a.requestId === requestId);
    if (!pending) throw new MeshError('NOT_FOUND', `session ${record.id} has no approval request ${requestId}`);
    if (pending.status !== 'pending') throw new MeshError('CONFLICT', `approval request ${requestId} was already answered (${pending.status})`);
    // Asked before the tool runs: the turn waits in the CLI's permission hook, which reads this answer.
    if (requestId.startsWith(LIVE_APPROVAL_PREFIX)) {
      await store.resolveApproval(record.id, requestId, decision);
      return true;
    }
    let cwd: string | null = null;
    if (decision === 'APPROVE') {
      cwd = await places.cwdOf(record);
      if (record.turnId && record.turnExpiresAt && record.turnExpiresAt.getTime() > Date.now()) {
        throw new MeshError('TURN_IN_FLIGHT', `session ${record.id} has a turn in flight (turn ${record.turnId}); answer the approval once it completed`, { turnId: record.turnId });
      }
    }
    await store.resolveApproval(record.id, requestId, decision);
    if (decision === 'APPROVE') {
      const input = pending.toolInput as Record<string, unknown> | null;
      const command = input && typeof input.command === 'string' ? input.command : null;
      const allow = pending.toolName === 'Bash' && command ? `Bash(${command})` : pending.toolName;
      const turn = await turns.start(record, cwd!, {
        text: `The user approved your ${pending.toolName} call (${JSON.stringify(input)}). Run it again now, exactly as before.`,
        attachments: [],
        allowTools: [allow],
        holder: `approval:${HOST}:${process.pid}`,
        taskId: record.taskId,
      });
      turn.done.catch(() => undefined);
    }
    return true;
  }
}
