import type { HarnessControlPlane } from '@keelson/harness';
import type { ApprovalReader, ApprovalRecord } from '@keelson/operator';
import { ASSERTION_HEADER, ASSERTION_PARAM, isUuid, MeshError, runLimits, utf8Bytes, type ApprovalDecision, type Caller } from '@keelson/schema';
import { currentCaller, serviceCaller, type AssertionKey, type ServiceIdentity } from '@keelson/service';

/** What the runs subgraph answered for a gate (`RespondToRunResult`). */
interface Responded {
  ok: boolean;
  error: string | null;
  duplicate: boolean;
}

/**
 * The run gates' door: the runs subgraph's `respondToRun`, called over GraphQL *as the caller*
 * (their own assertion, signed with the mesh's key: never more than they hold), so the answer
 * that closes the gate records the operator, not this service.
 */
export interface RunGateDoor {
  respond(caller: Caller | undefined, args: { runId: string; nodeId: string; text: string; pauseId: string }): Promise<Responded>;
}

export function graphqlRunGateDoor(runsUrl: string, key: AssertionKey, self: ServiceIdentity): RunGateDoor {
  const as = (caller: Caller | undefined): ServiceIdentity =>
    caller
      ? {
          caller,
          headers: async () => ({ [ASSERTION_HEADER]: await key.sign(caller) }),
          connectionParams: async () => ({ [ASSERTION_PARAM]: await key.sign(caller) }),
        }
      : self;
  return {
    async respond(caller, args) {
      const call = serviceCaller('the runs subgraph', runsUrl, { identity: as(caller), timeoutMs: 60_000 });
      const data = await call<{ respondToRun: Responded }>(
        'mutation ($r: ID!, $n: String!, $t: String!, $p: String) { respondToRun(runId: $r, nodeId: $n, text: $t, pauseId: $p) { ok error duplicate } }',
        { r: args.runId, n: args.nodeId, t: args.text, p: args.pauseId },
      );
      return data.respondToRun;
    },
  };
}

function approvedText(text: string): boolean {
  const t = text.trim().toLowerCase();
  return t === 'approve' || t === 'approved';
}

/** Why an approval is no longer open, for the CONFLICT of a stale or second answer. */
function notOpen(a: ApprovalRecord): MeshError {
  const at = (d: Date | null) => (d ? d.toISOString() : '?');
  const why =
    a.status === 'ANSWERED'
      ? `was already answered (${a.decision ?? a.answer ?? '?'}${a.answeredBy ? ` by ${a.answeredBy}` : ''} at ${at(a.answeredAt)}); one answer is recorded per approval`
      : a.status === 'EXPIRED'
        ? `expired at ${at(a.closedAt)} (${a.closeReason ?? 'its asker stopped waiting'}); nothing waits for an answer any more`
        : `was cancelled at ${at(a.closedAt)} (${a.closeReason ?? 'its work ended'}); nothing waits for an answer any more`;
  return new MeshError('CONFLICT', `approval ${a.id} (${a.kind}) ${why}`, { approvalId: a.id, status: a.status });
}

/**
 * `answerApproval`: one door for every kind. It reads the approval, refuses one that is not open,
 * and answers through the gate's own door — the run's `respond` Update (run gates, policy asks) or
 * the control plane's resolveApproval (harness tools) — whose transaction records the answer and
 * its event; the row is then read back.
 */
export class ApprovalService {
  constructor(
    readonly reader: ApprovalReader,
    private readonly plane: HarnessControlPlane,
    private readonly runs: RunGateDoor | null,
  ) {}

  async require(id: string): Promise<ApprovalRecord> {
    const [row] = isUuid(id) ? await this.reader.byIds([id]) : [];
    if (!row) throw new MeshError('NOT_FOUND', `approval ${JSON.stringify(id)} does not exist`);
    return row;
  }

  async answer(id: string, decision: ApprovalDecision, text: string | null): Promise<ApprovalRecord> {
    if (text != null) {
      const bytes = utf8Bytes(text);
      if (bytes > runLimits.answerBytes) throw new MeshError('BAD_USER_INPUT', `text: must be at most ${runLimits.answerBytes} bytes, got ${bytes}`);
    }
    const approval = await this.require(id);
    if (approval.status !== 'OPEN') throw notOpen(approval);
    switch (approval.kind) {
      case 'RUN_GATE':
      case 'POLICY_ASK':
        await this.answerRunGate(approval, decision, text);
        break;
      case 'HARNESS_TOOL': {
        const requestId = (approval.detail as { requestId?: string } | null)?.requestId;
        if (!approval.sessionId || !requestId) throw new MeshError('INTERNAL', `approval ${approval.id} names no session request`);
        try {
          await this.plane.resolveApproval(approval.sessionId, requestId, decision);
        } catch (err) {
          // Answered meanwhile through the other door (or a racing answerApproval): say so from the row.
          if (err instanceof MeshError && err.code === 'CONFLICT') throw notOpen(await this.require(id));
          throw err;
        }
        break;
      }
      case 'SWARM_GATE':
        throw new MeshError('CAPABILITY_UNSUPPORTED', `approval ${approval.id}: swarm gates are answered in the swarm's channel`);
    }
    return this.require(id);
  }

  private async answerRunGate(approval: ApprovalRecord, decision: ApprovalDecision, text: string | null): Promise<void> {
    const d = (approval.detail ?? {}) as { runId?: string; nodeId?: string; pauseId?: string };
    if (!d.runId || !d.nodeId || !d.pauseId) throw new MeshError('INTERNAL', `approval ${approval.id} names no run gate`);
    if (!this.runs) throw new MeshError('SERVICE_UNAVAILABLE', 'run gates cannot be answered here: the sessions subgraph was started without the runs subgraph\'s URL');
    // A gate's answer is text: `approve` approves; anything else is feedback (a denial).
    const deny = text?.trim() ? text : 'denied';
    if (decision === 'DENY' && approvedText(deny)) throw new MeshError('BAD_USER_INPUT', 'text: a DENY cannot say "approve"; give the reason instead');
    const answer = decision === 'APPROVE' ? 'approve' : deny;
    const result = await this.runs.respond(currentCaller(), { runId: d.runId, nodeId: d.nodeId, text: answer, pauseId: d.pauseId });
    if (result.ok && !result.duplicate) return;
    const now = await this.require(approval.id);
    if (now.status !== 'OPEN') throw notOpen(now);
    throw new MeshError('CONFLICT', `approval ${approval.id} (${approval.kind}) was not answered: ${result.error ?? 'the gate already had this answer'}`, { approvalId: approval.id });
  }
}
