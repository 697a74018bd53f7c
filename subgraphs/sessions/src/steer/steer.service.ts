import { createHash, randomUUID } from 'node:crypto';
import type { HarnessControlPlane } from '@keelson/harness';
import { actorOf, MeshError, sessionSteerLimits, utf8Bytes, workflowKinds, workflowTypes, type SessionSteerInput, type SteerStatus } from '@keelson/schema';
import { currentCaller, type Logger } from '@keelson/service';
import { searchAttributeKeys, sessionSteerUpdate, sessionSteerWorkflowId } from '@keelson/temporal';
import { WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import { z } from 'zod';
import type { TemporalLink } from '../temporalLink';

export const steerTextSchema = z
  .string()
  .refine((s) => s.trim().length > 0, 'must not be empty')
  .refine((s) => utf8Bytes(s) <= sessionSteerLimits.textBytes, `must be at most ${sessionSteerLimits.textBytes} bytes`)
  .refine((s) => !s.includes('\u0000'), 'must not contain NUL');

/** How a steer was answered (`SteerResult` in the schema). */
export interface SteerAnswer {
  status: SteerStatus;
  reason: string;
}

/**
 * `steerSession`: a steer goes into the live turn where the harness takes input mid-turn; no driver
 * of this mesh does (each runs its CLI headless with stdin closed — `capabilities.midTurnInput`), so
 * every steer is queued durably in the session's `sessionSteer` workflow and runs, in order, as the
 * session's next turn. Rejected with the reason when the harness cannot run a next turn here or the
 * queue is full.
 */
export class SteerService {
  constructor(
    private readonly plane: HarnessControlPlane,
    private readonly temporal: TemporalLink,
    private readonly log: Logger,
    private readonly heartbeatTimeoutMs: number,
  ) {}

  /**
   * @param dedupe a caller-scoped key: the same key is one steer for as long as the session's queue
   *   workflow runs (the Temporal update id), on top of the idempotency record the resolver keeps.
   * @throws NOT_FOUND (no such session), SERVICE_UNAVAILABLE (no Temporal).
   */
  async steer(rawSessionId: string, text: string, dedupe: string | null): Promise<SteerAnswer> {
    const view = await this.plane.requireSession(rawSessionId);
    const report = await this.plane.capabilities(view.harnessId);
    if (!report.flags.resume) return { status: 'REJECTED', reason: `${view.harnessId} cannot run a next turn of this session: ${report.reasons.resume ?? 'unavailable'}` };
    const client = await this.temporal.connect('session steers');
    const input: SessionSteerInput = { sessionId: view.id, harnessId: view.harnessId, heartbeatTimeoutMs: this.heartbeatTimeoutMs };
    const start = new WithStartWorkflowOperation(workflowTypes.sessionSteer, {
      workflowId: sessionSteerWorkflowId(view.id),
      taskQueue: this.temporal.taskQueue,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      typedSearchAttributes: [
        { key: searchAttributeKeys.kind, value: workflowKinds.steer },
        { key: searchAttributeKeys.workflowName, value: workflowTypes.sessionSteer },
        { key: searchAttributeKeys.harness, value: view.harnessId },
        ...(view.record?.projectId ? [{ key: searchAttributeKeys.project, value: view.record.projectId }] : []),
      ],
      memo: { title: `steers of ${view.id}` },
    });
    const live = view.record?.turnId ?? null;
    const sender = currentCaller();
    try {
      const answer = await client.workflow.executeUpdateWithStart(sessionSteerUpdate, {
        // The sender rides along: the steer's turn runs in the worker, its events name them.
        args: [{ text, actor: sender ? actorOf(sender) : null }],
        updateId: dedupe ? `key:${createHash('sha256').update(dedupe).digest('hex')}` : randomUUID(),
        startWorkflowOperation: start,
      });
      const where = answer.position === 1 ? 'the next turn' : `turn ${answer.position} of the queue`;
      return {
        status: 'QUEUED',
        reason: live
          ? `a turn is running and ${report.reasons.midTurnInput ?? `${view.harnessId} takes no input mid-turn`}; it runs as ${where}`
          : `no turn is running: it runs as ${where}, as soon as the session is free`,
      };
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError) return { status: 'REJECTED', reason: (err.cause as Error | undefined)?.message ?? err.message };
      this.log.error({ err, sessionId: view.id }, 'queueing a session steer failed');
      throw new MeshError('SERVICE_UNAVAILABLE', `Temporal did not take the steer (${(err as Error).message}); retry`);
    }
  }
}
