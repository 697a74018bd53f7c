import type { EventLog } from '@keelson/platform';
import { ApprovalLedger } from '@keelson/operator';
import {
  type Actor,
  finalNodeStatuses,
  isTerminalRunStatus,
  MeshError,
  POLICY_APPROVAL_WORKFLOW,
  streams,
  type RunEventPayload,
  type RunEventType,
  type RunNodeStatus,
} from '@keelson/schema';
import type { DataSource, EntityManager } from 'typeorm';
import {
  approvalKeyOf,
  NODE_COLUMNS,
  RUN_COLUMNS,
  toNode,
  toRun,
  whenValue,
  type CapturedOutput,
  type LaunchNodeState,
  type NewRun,
  type NodeRecord,
  type NodeRow,
  type RunCheckoutRecord,
  type RunRecord,
  type RunRecordRow,
} from './runRecords';
import { clip, notifyStreamChange, pgText, rows } from '@keelson/platform';

/**
 * The one writer of run state. Every transition changes its rows and appends its `runs` event in one
 * transaction, and only when the state really changes — so an activity retried after its commit
 * (a worker killed between commit and reply) writes neither state nor event twice.
 */
export class RunStore {
  private readonly approvals: ApprovalLedger;

  constructor(
    private readonly dataSource: DataSource,
    private readonly events: EventLog,
  ) {
    this.approvals = new ApprovalLedger(events);
  }

  private append(m: EntityManager, type: RunEventType, payload: RunEventPayload, actor?: Actor) {
    return this.events.append(m, { stream: streams.runs, key: payload.runId, type, payload, ...(actor ? { actor } : {}) });
  }

  private async lockRun(m: EntityManager, runId: string): Promise<RunRecord> {
    const [row] = await rows<RunRecordRow>(m, `SELECT ${RUN_COLUMNS} FROM runs WHERE id = $1 FOR UPDATE`, [runId]);
    if (!row) throw new MeshError('NOT_FOUND', `run ${JSON.stringify(runId)} does not exist`);
    return toRun(row);
  }

  private async lockNode(m: EntityManager, runId: string, nodeId: string): Promise<NodeRecord> {
    const [row] = await rows<NodeRow>(m, `SELECT ${NODE_COLUMNS} FROM run_nodes WHERE run_id = $1 AND node_id = $2 FOR UPDATE`, [runId, nodeId]);
    if (!row) throw new MeshError('NOT_FOUND', `run ${runId} has no node ${JSON.stringify(nodeId)}`);
    return toNode(row);
  }

  /**
   * Registers a run (status RUNNING, launch 1) and its nodes, all PENDING, in one transaction that
   * notifies the `runs` stream's readers of the change (`RUN_STARTED` is appended only once the
   * executor took the run: until then a cached list of runs would miss it).
   */
  async createRun(run: NewRun): Promise<void> {
    await this.dataSource.transaction(async (m) => {
      await this.insertRun(m, run);
      await notifyStreamChange(m, streams.runs);
    });
  }

  private async insertRun(m: EntityManager, run: NewRun): Promise<void> {
    await m.query(
      `WITH r AS (
         INSERT INTO runs (id, workflow_name, title, definition, scope, inputs, project_id, project_name, rib_id, started_by_rib_id,
                           status, cwd, artifacts_dir, temporal_workflow_id, launch, started_by)
         VALUES ($1, $2, $3, $4::jsonb, $5, $6::jsonb, $7, $8, $9, $10, 'RUNNING', $11, $12, $13, 1, $15::jsonb)
         RETURNING id
       )
       INSERT INTO run_nodes (run_id, node_id, position, type, depends_on)
       SELECT r.id, n.id, n.position, n.type, ARRAY(SELECT jsonb_array_elements_text(n.deps))
       FROM r, jsonb_to_recordset($14::jsonb) AS n(id text, position int, type text, deps jsonb)`,
      [
        run.id,
        run.workflowName,
        run.title,
        JSON.stringify(run.definition),
        run.scope,
        JSON.stringify(run.inputs),
        run.projectId,
        run.projectName,
        run.ribId,
        run.startedByRibId,
        run.cwd,
        run.artifactsDir,
        run.temporalWorkflowId,
        JSON.stringify(run.definition.nodes.map((n, position) => ({ id: n.id, position, type: n.type, deps: n.depends_on }))),
        run.startedBy ? JSON.stringify(run.startedBy) : null,
      ],
    );
  }

  async getRun(runId: string): Promise<RunRecord | null> {
    const [row] = await rows<RunRecordRow>(this.dataSource, `SELECT ${RUN_COLUMNS} FROM runs WHERE id = $1`, [runId]);
    return row ? toRun(row) : null;
  }

  async getNode(runId: string, nodeId: string): Promise<NodeRecord | null> {
    const [row] = await rows<NodeRow>(this.dataSource, `SELECT ${NODE_COLUMNS} FROM run_nodes WHERE run_id = $1 AND node_id = $2`, [runId, nodeId]);
    return row ? toNode(row) : null;
  }

  /** Outputs of the given nodes (for `{{nodes.<id>.output}}` in prompts); absent ids are omitted. */
  async outputsOf(runId: string, nodeIds: readonly string[]): Promise<Record<string, string>> {
    if (nodeIds.length === 0) return {};
    const found = await rows<{ node_id: string; output: string | null }>(
      this.dataSource,
      'SELECT node_id, output FROM run_nodes WHERE run_id = $1 AND node_id = ANY($2::text[])',
      [runId, [...nodeIds]],
    );
    return Object.fromEntries(found.map((r) => [r.node_id, r.output ?? '']));
  }

  /**
   * Records that the executor accepted launch `launch` of a run as execution `temporalRunId`, with
   * `RUN_STARTED`, unless the launch is already recorded. Whichever comes first writes it: the start
   * (right after the executor took it, so subscribers see the run start without waiting for the
   * first activity) or the launch's first activity (`beginLaunch`, when the start could not).
   */
  async openLaunch(runId: string, launch: number, temporalRunId: string): Promise<void> {
    await this.dataSource.transaction((m) => this.recordLaunch(m, runId, launch, temporalRunId));
  }

  private async recordLaunch(m: EntityManager, runId: string, launch: number, temporalRunId: string): Promise<void> {
    const inserted = await rows(
      m,
      'INSERT INTO run_launches (run_id, launch, temporal_run_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING launch',
      [runId, launch, temporalRunId],
    );
    if (inserted.length) await this.append(m, 'RUN_STARTED', { runId, launch });
  }

  /**
   * Opens launch `launch` of a run (once: `RUN_STARTED` is written by the first call only) and returns
   * the run with every node's state, so a resumed launch skips what already completed.
   */
  async beginLaunch(runId: string, launch: number, temporalRunId: string): Promise<{ run: RunRecord; nodes: Record<string, LaunchNodeState> }> {
    return this.dataSource.transaction(async (m) => {
      const run = await this.lockRun(m, runId);
      if (run.launch !== launch) {
        throw new MeshError('CONFLICT', `run ${runId} is at launch ${run.launch}; launch ${launch} is stale`);
      }
      await this.recordLaunch(m, runId, launch, temporalRunId);
      const nodeRows = await rows<NodeRow>(m, `SELECT ${NODE_COLUMNS} FROM run_nodes WHERE run_id = $1 ORDER BY position`, [runId]);
      const nodes: Record<string, LaunchNodeState> = {};
      for (const r of nodeRows) {
        const final = (finalNodeStatuses as readonly string[]).includes(r.status);
        nodes[r.node_id] = final ? { status: r.status, value: whenValue(r.output) } : { status: 'PENDING' };
      }
      return { run, nodes };
    });
  }

  /**
   * Marks an attempt of a node RUNNING (`NODE_STARTED`, once per attempt). A node that already
   * completed is returned as such and must not run again.
   */
  async startAttempt(runId: string, nodeId: string, launch: number, attempt: number): Promise<{ completed?: NodeRecord }> {
    return this.dataSource.transaction(async (m) => {
      const node = await this.lockNode(m, runId, nodeId);
      if ((finalNodeStatuses as readonly string[]).includes(node.status)) return { completed: node };
      if (node.status === 'RUNNING' && node.attempt === attempt && node.launch === launch) return {};
      await m.query(
        `UPDATE run_nodes SET status = 'RUNNING', launch = $3, attempt = $4, started_at = now(), completed_at = NULL,
                              error = NULL, exit_code = NULL
         WHERE run_id = $1 AND node_id = $2`,
        [runId, nodeId, launch, attempt],
      );
      await this.append(m, 'NODE_STARTED', { runId, launch, nodeId, attempt });
      return {};
    });
  }

  /**
   * Records the prompt a prompt node's attempt sends (rendered), while that attempt is the running
   * one; a later attempt overwrites it with its own (the same text: upstream outputs are final).
   */
  async recordPrompt(runId: string, nodeId: string, launch: number, attempt: number, prompt: string): Promise<void> {
    await this.dataSource.query(
      `UPDATE run_nodes SET prompt = $5 WHERE run_id = $1 AND node_id = $2 AND launch = $3 AND attempt = $4 AND status = 'RUNNING'`,
      [runId, nodeId, launch, attempt, pgText(prompt)],
    );
  }

  /** A node's run succeeded: its output and `NODE_SUCCEEDED`, once. */
  async completeNode(runId: string, nodeId: string, launch: number, captured: CapturedOutput): Promise<boolean> {
    return this.dataSource.transaction(async (m) => {
      const changed = await rows(
        m,
        `UPDATE run_nodes SET status = 'SUCCEEDED', output = $4, output_bytes = $5, output_truncated = $6, exit_code = $7,
                              error = NULL, completed_at = now()
         WHERE run_id = $1 AND node_id = $2 AND launch = $3 AND status = 'RUNNING' RETURNING node_id`,
        [runId, nodeId, launch, pgText(captured.output), captured.outputBytes, captured.truncated, captured.exitCode],
      );
      if (changed.length) await this.append(m, 'NODE_SUCCEEDED', { runId, launch, nodeId, exitCode: captured.exitCode });
      return changed.length > 0;
    });
  }

  /**
   * One attempt failed (non-zero exit, its own timeout): its output and `NODE_ATTEMPT_FAILED`, once
   * per attempt. Returns how many attempts of this launch failed so far.
   */
  async attemptFailed(
    runId: string,
    nodeId: string,
    launch: number,
    attempt: number,
    captured: CapturedOutput & { error: string },
  ): Promise<number> {
    return this.dataSource.transaction(async (m) => {
      const changed = await rows<{ failures: number }>(
        m,
        `UPDATE run_nodes SET output = $5, output_bytes = $6, output_truncated = $7, exit_code = $8, error = $9,
                              failures = failures + 1, completed_at = now()
         WHERE run_id = $1 AND node_id = $2 AND launch = $3 AND attempt = $4 AND status = 'RUNNING' AND completed_at IS NULL
         RETURNING failures`,
        [runId, nodeId, launch, attempt, pgText(captured.output), captured.outputBytes, captured.truncated, captured.exitCode, pgText(captured.error)],
      );
      if (changed.length) {
        await this.append(m, 'NODE_ATTEMPT_FAILED', { runId, launch, nodeId, attempt, exitCode: captured.exitCode, error: clip(captured.error) });
        return changed[0]!.failures;
      }
      return (await this.lockNode(m, runId, nodeId)).failures;
    });
  }

  /**
   * Settles a node that did not complete by itself: FAILED (retries exhausted, worker lost),
   * CANCELLED, SKIPPED (`when` false or a skipped dependency), or SUCCEEDED for a `cancel` node.
   * A node already settled is left as it is.
   */
  async settleNode(
    runId: string,
    nodeId: string,
    launch: number,
    status: Exclude<RunNodeStatus, 'PENDING' | 'RUNNING' | 'WAITING'>,
    detail: { error?: string; output?: string } = {},
  ): Promise<boolean> {
    return this.dataSource.transaction(async (m) => {
      const changed = await rows(
        m,
        `UPDATE run_nodes SET status = $4, launch = $3, error = coalesce($5, error), output = coalesce($6, output),
                              completed_at = coalesce(completed_at, now())
         WHERE run_id = $1 AND node_id = $2 AND status NOT IN ('SUCCEEDED', 'FAILED', 'SKIPPED', 'CANCELLED') RETURNING node_id`,
        [runId, nodeId, launch, status, detail.error === undefined ? null : pgText(detail.error), detail.output === undefined ? null : pgText(detail.output)],
      );
      if (changed.length) {
        await this.append(m, `NODE_${status}` as RunEventType, { runId, launch, nodeId, ...(detail.error ? { error: clip(detail.error) } : {}) });
      }
      return changed.length > 0;
    });
  }

  /**
   * Opens an approval gate: the pause row, the node WAITING (`NODE_WAITING`), and the run PAUSED
   * (`RUN_PAUSED`) if it was running. Once per pause id.
   */
  async openGate(runId: string, nodeId: string, launch: number, pauseId: string, prompt: string, artifacts: unknown[]): Promise<void> {
    await this.dataSource.transaction(async (m) => {
      const run = await this.lockRun(m, runId);
      const inserted = await rows(
        m,
        `INSERT INTO run_pauses (pause_id, run_id, node_id, launch, prompt, artifacts) VALUES ($1, $2, $3, $4, $5, $6::jsonb)
         ON CONFLICT DO NOTHING RETURNING pause_id`,
        [pauseId, runId, nodeId, launch, pgText(prompt), JSON.stringify(artifacts)],
      );
      if (!inserted.length) return;
      await m.query(
        `UPDATE run_nodes SET status = 'WAITING', launch = $3, attempt = attempt + 1, started_at = now(), completed_at = NULL, error = NULL
         WHERE run_id = $1 AND node_id = $2`,
        [runId, nodeId, launch],
      );
      await this.append(m, 'NODE_WAITING', { runId, launch, nodeId, pauseId });
      // The inbox's row, in the gate's transaction: a policy ask is a policy-approval run's gate.
      await this.approvals.open(m, {
        sourceKey: approvalKeyOf(pauseId),
        kind: run.workflowName === POLICY_APPROVAL_WORKFLOW ? 'POLICY_ASK' : 'RUN_GATE',
        question: prompt,
        detail: { runId, nodeId, pauseId, launch, workflowName: run.workflowName, artifacts: artifacts.length },
        runId,
        projectId: run.projectId,
      });
      if (run.status === 'RUNNING') {
        await m.query(`UPDATE runs SET status = 'PAUSED' WHERE id = $1`, [runId]);
        await this.append(m, 'RUN_PAUSED', { runId, launch, nodeId, pauseId });
      }
    });
  }

  /**
   * Records the one decision of a pause: the answer, the node's outcome and — when no other gate is
   * open — the run RUNNING again (`APPROVAL_ANSWERED`, `NODE_<outcome>`, `RUN_RESUMED`). A pause
   * already answered keeps its first decision; `duplicate` says whether this answer repeats it.
   */
  async closeGate(
    runId: string,
    pauseId: string,
    answer: { text: string; decision: 'approved' | 'feedback'; outcome: 'SUCCEEDED' | 'FAILED'; error?: string; actor?: Actor },
  ): Promise<{ recorded: boolean; decision: string | null; closedBy: string | null }> {
    return this.dataSource.transaction(async (m) => {
      const run = await this.lockRun(m, runId);
      const [pause] = await rows<{ node_id: string; launch: number; decision: string | null; closed_by: string | null }>(
        m,
        'SELECT node_id, launch, decision, closed_by FROM run_pauses WHERE pause_id = $1 AND run_id = $2 FOR UPDATE',
        [pauseId, runId],
      );
      if (!pause) throw new MeshError('NOT_FOUND', `run ${runId} has no pause ${JSON.stringify(pauseId)}`);
      if (pause.closed_by !== null) return { recorded: false, decision: pause.decision, closedBy: pause.closed_by };
      const { node_id: nodeId, launch } = pause;
      await m.query(
        `UPDATE run_pauses SET decision = $2, answered_at = now(), closed_at = now(), closed_by = 'answer' WHERE pause_id = $1`,
        [pauseId, pgText(answer.text)],
      );
      await this.append(m, 'APPROVAL_ANSWERED', { runId, launch, nodeId, pauseId, decision: answer.decision }, answer.actor);
      await this.approvals.answer(m, approvalKeyOf(pauseId), {
        decision: answer.decision === 'approved' ? 'APPROVE' : 'DENY',
        answer: answer.text,
        actor: answer.actor ?? null,
      });
      await m.query(
        `UPDATE run_nodes SET status = $3, output = $4, output_bytes = $5, output_truncated = false, error = $6, completed_at = now()
         WHERE run_id = $1 AND node_id = $2`,
        [runId, nodeId, answer.outcome, pgText(answer.text), Buffer.byteLength(answer.text), answer.error ?? null],
      );
      await this.append(m, `NODE_${answer.outcome}`, { runId, launch, nodeId, ...(answer.error ? { error: clip(answer.error) } : {}) });
      const [open] = await rows<{ n: string }>(m, 'SELECT count(*) AS n FROM run_pauses WHERE run_id = $1 AND closed_at IS NULL', [runId]);
      if (run.status === 'PAUSED' && Number(open?.n ?? 0) === 0) {
        await m.query(`UPDATE runs SET status = 'RUNNING' WHERE id = $1`, [runId]);
        await this.append(m, 'RUN_RESUMED', { runId, launch, nodeId, pauseId });
      }
      return { recorded: true, decision: answer.text, closedBy: 'answer' };
    });
  }

  /**
   * Settles the launch: open gates closed (their nodes CANCELLED), the run's terminal status and
   * `RUN_<status>` (with the released checkout, when given). Once: a run already terminal, or at a
   * later launch, is left alone.
   */
  async finishRun(
    runId: string,
    launch: number,
    status: 'SUCCEEDED' | 'FAILED' | 'CANCELLED',
    error?: string,
    checkout?: RunCheckoutRecord,
  ): Promise<{ changed: boolean; run: RunRecord }> {
    return this.dataSource.transaction(async (m) => {
      const run = await this.lockRun(m, runId);
      if (run.launch !== launch || isTerminalRunStatus(run.status)) return { changed: false, run };
      const closed = await rows<{ node_id: string; pause_id: string }>(
        m,
        `UPDATE run_pauses SET closed_at = now(), closed_by = $2 WHERE run_id = $1 AND closed_at IS NULL RETURNING node_id, pause_id`,
        [runId, status.toLowerCase()],
      );
      // A policy ask's run is cancelled when its asker stops waiting: that approval expired.
      const expired = run.workflowName === POLICY_APPROVAL_WORKFLOW && status === 'CANCELLED';
      await this.approvals.close(
        m,
        closed.map((c) => approvalKeyOf(c.pause_id)),
        expired ? 'EXPIRED' : 'CANCELLED',
        expired ? 'the asker stopped waiting' : `the run ${status.toLowerCase()}`,
      );
      for (const { node_id: nodeId } of closed) {
        const settled = await rows(
          m,
          `UPDATE run_nodes SET status = 'CANCELLED', completed_at = now(), error = $3
           WHERE run_id = $1 AND node_id = $2 AND status = 'WAITING' RETURNING node_id`,
          [runId, nodeId, `the gate closed: the run ${status.toLowerCase()}`],
        );
        if (settled.length) await this.append(m, 'NODE_CANCELLED', { runId, launch, nodeId });
      }
      await m.query('UPDATE runs SET status = $2, error = $3, completed_at = now(), checkout = coalesce($4::jsonb, checkout) WHERE id = $1', [
        runId,
        status,
        error === undefined ? null : pgText(error),
        checkout === undefined ? null : JSON.stringify(checkout),
      ]);
      await this.append(m, `RUN_${status}`, { runId, launch, ...(error ? { error: clip(error) } : {}) });
      return { changed: true, run: { ...run, status } };
    });
  }

  /** Records the run's checkout (the workspace lease it runs in, or its release). */
  async setCheckout(runId: string, checkout: RunCheckoutRecord): Promise<void> {
    await this.dataSource.query('UPDATE runs SET checkout = $2::jsonb WHERE id = $1', [runId, JSON.stringify(checkout)]);
  }

  /** Sets the run's working directory (a leased worktree replaces the project root). */
  async setCwd(runId: string, cwd: string): Promise<void> {
    await this.dataSource.query('UPDATE runs SET cwd = $2 WHERE id = $1', [runId, cwd]);
  }

  /**
   * Prepares a FAILED or CANCELLED run for its next launch: launch + 1, RUNNING, and every node that
   * did not complete back to PENDING. CONFLICT for any other status.
   */
  async prepareResume(runId: string): Promise<RunRecord> {
    return this.dataSource.transaction(async (m) => {
      const run = await this.lockRun(m, runId);
      if (run.status !== 'FAILED' && run.status !== 'CANCELLED') {
        throw new MeshError('CONFLICT', `run ${runId} is ${run.status}; only a FAILED or CANCELLED run can be resumed`);
      }
      await m.query(`UPDATE runs SET launch = launch + 1, status = 'RUNNING', error = NULL, completed_at = NULL WHERE id = $1`, [runId]);
      await m.query(
        `UPDATE run_nodes SET status = 'PENDING', failures = 0 WHERE run_id = $1 AND status NOT IN ('SUCCEEDED', 'SKIPPED')`,
        [runId],
      );
      // The launch's `RUN_STARTED` comes once the executor took it; readers of the stream hear of the change now.
      await notifyStreamChange(m, streams.runs);
      return { ...run, launch: run.launch + 1, status: 'RUNNING' };
    });
  }

  /** A launch whose workflow could not be started: FAILED with the reason (`RUN_FAILED`). */
  async failToStart(runId: string, launch: number, error: string): Promise<void> {
    await this.finishRun(runId, launch, 'FAILED', `the run could not start: ${error}`);
  }
}
