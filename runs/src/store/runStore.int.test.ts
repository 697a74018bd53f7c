import type { DomainState } from '@keelson/platform';
import { randomUUID } from 'node:crypto';
import { ApprovalReader } from '@keelson/operator';
import { streams, WHEN_VALUE_CHARS, type Caller } from '@keelson/schema';
import { openTestDomainState } from '../../../test/support/domainState';
import { definitionOf, registerRun } from '../../../test/support/registerRun';
import { RUNS_MIGRATIONS_TABLE, runsMigrations } from '../migrations';
import { RunStore } from './runStore';

/**
 * RunStore's transitions on real Postgres: the rows each writes and the `runs` events it commits with
 * them, and that a repeated or refused transition writes neither.
 */
describe('RunStore', () => {
  let state: DomainState;
  let store: RunStore;

  beforeAll(async () => {
    state = await openTestDomainState(runsMigrations, RUNS_MIGRATIONS_TABLE);
    store = new RunStore(state.dataSource, state.events);
  });
  afterAll(() => state?.close());

  const sql = <T>(text: string, params: unknown[] = []) => state.dataSource.query(text, params) as Promise<T[]>;

  /** The run's events, oldest first, as appended (type, payload, actor). */
  const events = (runId: string) =>
    sql<{ type: string; payload: Record<string, unknown>; actor: unknown }>('SELECT type, payload, actor FROM events WHERE stream = $1 AND key = $2 ORDER BY seq', [
      streams.runs,
      runId,
    ]);
  const types = async (runId: string) => (await events(runId)).map((e) => e.type);

  interface NodeColumns {
    status: string;
    launch: number | null;
    attempt: number;
    failures: number;
    output: string | null;
    output_bytes: string;
    output_truncated: boolean;
    exit_code: number | null;
    error: string | null;
    prompt: string | null;
    started_at: Date | null;
    completed_at: Date | null;
  }
  const nodeRow = async (runId: string, nodeId: string) =>
    (await sql<NodeColumns>('SELECT * FROM run_nodes WHERE run_id = $1 AND node_id = $2', [runId, nodeId]))[0]!;
  const runRow = async (runId: string) =>
    (await sql<{ status: string; launch: number; error: string | null; completed_at: Date | null; checkout: unknown; cwd: string }>('SELECT * FROM runs WHERE id = $1', [runId]))[0]!;

  /** a → b → gate, plus `side` on its own; launch 1 open. */
  const definition = definitionOf({
    name: 'store-spec',
    nodes: [
      { id: 'a', type: 'bash', bash: 'echo a' },
      { id: 'b', type: 'bash', bash: 'echo b', depends_on: ['a'] },
      { id: 'gate', type: 'approval', prompt: 'Ship it?', depends_on: ['b'] },
      { id: 'side', type: 'cancel', reason: 'stop' },
    ],
  });
  async function newRun(over: { workflowName?: string; open?: boolean } = {}): Promise<string> {
    const { id } = await registerRun(store, over.workflowName ? { ...definition, name: over.workflowName } : definition, { cwd: '/tmp/store-spec' });
    if (over.open !== false) await store.openLaunch(id, 1, `temporal-${id}`);
    return id;
  }
  const captured = (output: string, exitCode: number | null = 0) => ({ output, outputBytes: Buffer.byteLength(output), truncated: false, exitCode });

  describe('createRun, getRun, getNode', () => {
    it('registers the run RUNNING at launch 1 with every node PENDING in definition order, and writes no event', async () => {
      const startedBy: Caller = { subject: 'user:ada', kind: 'jwt', scopes: ['read', 'write'] };
      const projectId = randomUUID();
      const run = await registerRun(store, definition, {
        cwd: '/tmp/p',
        inputs: { topic: 'x' },
        projectId,
        projectName: 'proj',
        ribId: 'rib-1',
        startedByRibId: 'rib-2',
        startedBy,
        scope: 'PROJECT',
        title: 'A title',
      });
      expect(await store.getRun(run.id)).toEqual({
        id: run.id,
        workflowName: 'store-spec',
        definition,
        inputs: { topic: 'x' },
        status: 'RUNNING',
        launch: 1,
        cwd: '/tmp/p',
        artifactsDir: `/tmp/p/${run.id}`,
        checkout: null,
        projectId,
        ribId: 'rib-1',
        startedByRibId: 'rib-2',
        startedBy,
        temporalWorkflowId: run.temporalWorkflowId,
      });
      const [raw] = await sql<{ title: string; scope: string; project_name: string }>('SELECT title, scope, project_name FROM runs WHERE id = $1', [run.id]);
      expect(raw).toEqual({ title: 'A title', scope: 'PROJECT', project_name: 'proj' });
      expect(await sql('SELECT node_id, position, type, depends_on, status FROM run_nodes WHERE run_id = $1 ORDER BY position', [run.id])).toEqual([
        { node_id: 'a', position: 0, type: 'bash', depends_on: [], status: 'PENDING' },
        { node_id: 'b', position: 1, type: 'bash', depends_on: ['a'], status: 'PENDING' },
        { node_id: 'gate', position: 2, type: 'approval', depends_on: ['b'], status: 'PENDING' },
        { node_id: 'side', position: 3, type: 'cancel', depends_on: [], status: 'PENDING' },
      ]);
      expect(await store.getNode(run.id, 'b')).toEqual({ nodeId: 'b', status: 'PENDING', launch: null, attempt: 0, failures: 0, output: null, exitCode: null, error: null });
      expect(await events(run.id)).toEqual([]);
    });

    it('records no caller as null, and answers null for an unknown run or node', async () => {
      const id = await newRun({ open: false });
      expect((await store.getRun(id))!.startedBy).toBeNull();
      expect((await sql<{ started_by: unknown }>('SELECT started_by FROM runs WHERE id = $1', [id]))[0]!.started_by).toBeNull();
      expect(await store.getRun(randomUUID())).toBeNull();
      expect(await store.getNode(id, 'nope')).toBeNull();
      expect(await store.getNode(randomUUID(), 'a')).toBeNull();
    });
  });

  describe('outputsOf', () => {
    it("maps the asked nodes of this run to their outputs ('' before any), omitting unknown ids", async () => {
      const id = await newRun();
      const other = await newRun();
      await store.startAttempt(id, 'a', 1, 1);
      await store.completeNode(id, 'a', 1, captured('out of a'));
      await store.startAttempt(other, 'b', 1, 1);
      await store.completeNode(other, 'b', 1, captured('out of the other run'));
      expect(await store.outputsOf(id, ['a', 'b', 'missing'])).toEqual({ a: 'out of a', b: '' });
      expect(await store.outputsOf(id, [])).toEqual({});
    });
  });

  describe('openLaunch and beginLaunch', () => {
    it('records a launch with RUN_STARTED once, whichever of them comes first', async () => {
      const id = await newRun({ open: false });
      await store.openLaunch(id, 1, 'exec-1');
      await store.openLaunch(id, 1, 'exec-again');
      await store.beginLaunch(id, 1, 'exec-late');
      expect(await sql('SELECT launch, temporal_run_id FROM run_launches WHERE run_id = $1', [id])).toEqual([{ launch: 1, temporal_run_id: 'exec-1' }]);
      expect(await events(id)).toEqual([{ type: 'RUN_STARTED', payload: { runId: id, launch: 1 }, actor: null }]);

      const late = await newRun({ open: false });
      await store.beginLaunch(late, 1, 'exec-b');
      await store.openLaunch(late, 1, 'exec-c');
      expect(await sql('SELECT temporal_run_id FROM run_launches WHERE run_id = $1', [late])).toEqual([{ temporal_run_id: 'exec-b' }]);
      expect(await types(late)).toEqual(['RUN_STARTED']);
    });

    it('returns the run and each node: final ones with their trimmed output as value, the rest PENDING', async () => {
      const id = await newRun();
      await store.startAttempt(id, 'a', 1, 1);
      await store.completeNode(id, 'a', 1, captured(`  ${'y'.repeat(WHEN_VALUE_CHARS + 10)}\n`));
      await store.settleNode(id, 'side', 1, 'SKIPPED');
      await store.startAttempt(id, 'b', 1, 1);
      await store.settleNode(id, 'b', 1, 'FAILED', { error: 'boom', output: 'partial' });
      await store.finishRun(id, 1, 'FAILED', 'boom');
      await store.prepareResume(id);
      const { run, nodes } = await store.beginLaunch(id, 2, 'exec-2');
      expect(run).toMatchObject({ id, status: 'RUNNING', launch: 2 });
      expect(nodes).toEqual({
        a: { status: 'SUCCEEDED', value: 'y'.repeat(WHEN_VALUE_CHARS) },
        b: { status: 'PENDING' },
        gate: { status: 'PENDING' },
        side: { status: 'SKIPPED', value: '' },
      });
      expect(Object.keys(nodes)).toEqual(['a', 'b', 'gate', 'side']);
      expect((await events(id)).slice(-1)).toEqual([{ type: 'RUN_STARTED', payload: { runId: id, launch: 2 }, actor: null }]);
    });

    it('refuses a stale launch with CONFLICT, recording nothing', async () => {
      const id = await newRun({ open: false });
      await expect(store.beginLaunch(id, 2, 'exec-x')).rejects.toMatchObject({ code: 'CONFLICT', message: `run ${id} is at launch 1; launch 2 is stale` });
      expect(await sql('SELECT * FROM run_launches WHERE run_id = $1', [id])).toEqual([]);
      expect(await events(id)).toEqual([]);
    });

    it('refuses an unknown run with NOT_FOUND', async () => {
      const missing = randomUUID();
      await expect(store.beginLaunch(missing, 1, 'x')).rejects.toMatchObject({ code: 'NOT_FOUND', message: `run "${missing}" does not exist` });
    });
  });

  describe('startAttempt', () => {
    it('marks the attempt RUNNING with NODE_STARTED once per attempt', async () => {
      const id = await newRun();
      expect(await store.startAttempt(id, 'a', 1, 1)).toEqual({});
      expect(await store.startAttempt(id, 'a', 1, 1)).toEqual({});
      expect(await nodeRow(id, 'a')).toMatchObject({ status: 'RUNNING', launch: 1, attempt: 1, completed_at: null });
      expect((await nodeRow(id, 'a')).started_at).toBeInstanceOf(Date);
      expect((await events(id)).slice(1)).toEqual([{ type: 'NODE_STARTED', payload: { runId: id, launch: 1, nodeId: 'a', attempt: 1 }, actor: null }]);
    });

    it("starts a new attempt afresh, clearing the failed one's error, exit code and end", async () => {
      const id = await newRun();
      await store.startAttempt(id, 'a', 1, 1);
      await store.attemptFailed(id, 'a', 1, 1, { ...captured('bad', 2), error: 'exit 2' });
      expect(await store.startAttempt(id, 'a', 1, 2)).toEqual({});
      expect(await nodeRow(id, 'a')).toMatchObject({ status: 'RUNNING', launch: 1, attempt: 2, failures: 1, error: null, exit_code: null, completed_at: null });
      expect((await types(id)).slice(1)).toEqual(['NODE_STARTED', 'NODE_ATTEMPT_FAILED', 'NODE_STARTED']);
    });

    it('starts the same attempt number again in another launch, or when the node is no longer running', async () => {
      const id = await newRun();
      await store.startAttempt(id, 'a', 1, 1);
      // The same attempt of launch 2 (a resumed run's node that was RUNNING when the worker died).
      await sql(`UPDATE runs SET launch = 2 WHERE id = $1`, [id]);
      await store.startAttempt(id, 'a', 2, 1);
      expect(await nodeRow(id, 'a')).toMatchObject({ status: 'RUNNING', launch: 2, attempt: 1 });
      // Settled FAILED, then the same attempt and launch start it again.
      await store.settleNode(id, 'b', 2, 'FAILED', { error: 'lost' });
      await store.startAttempt(id, 'b', 2, 0);
      expect(await nodeRow(id, 'b')).toMatchObject({ status: 'RUNNING', launch: 2, attempt: 0, error: null });
      expect((await events(id)).slice(1).map((e) => [e.type, e.payload])).toEqual([
        ['NODE_STARTED', { runId: id, launch: 1, nodeId: 'a', attempt: 1 }],
        ['NODE_STARTED', { runId: id, launch: 2, nodeId: 'a', attempt: 1 }],
        ['NODE_FAILED', { runId: id, launch: 2, nodeId: 'b', error: 'lost' }],
        ['NODE_STARTED', { runId: id, launch: 2, nodeId: 'b', attempt: 0 }],
      ]);
    });

    it('returns a completed node as such and leaves it alone', async () => {
      const id = await newRun();
      await store.startAttempt(id, 'a', 1, 1);
      await store.completeNode(id, 'a', 1, captured('done', 0));
      await store.settleNode(id, 'side', 1, 'SKIPPED');
      const before = await types(id);
      expect(await store.startAttempt(id, 'a', 1, 2)).toEqual({
        completed: { nodeId: 'a', status: 'SUCCEEDED', launch: 1, attempt: 1, failures: 0, output: 'done', exitCode: 0, error: null },
      });
      expect((await store.startAttempt(id, 'side', 1, 1)).completed).toMatchObject({ nodeId: 'side', status: 'SKIPPED' });
      expect(await nodeRow(id, 'a')).toMatchObject({ status: 'SUCCEEDED', attempt: 1 });
      expect(await types(id)).toEqual(before);
    });

    it('refuses an unknown node with NOT_FOUND', async () => {
      const id = await newRun();
      await expect(store.startAttempt(id, 'ghost', 1, 1)).rejects.toMatchObject({ code: 'NOT_FOUND', message: `run ${id} has no node "ghost"` });
    });
  });

  describe('recordPrompt', () => {
    it("records the running attempt's prompt (NUL made printable) and ignores any other attempt", async () => {
      const id = await newRun();
      await store.recordPrompt(id, 'a', 1, 1, 'too early');
      expect((await nodeRow(id, 'a')).prompt).toBeNull();
      await store.startAttempt(id, 'a', 1, 1);
      await store.recordPrompt(id, 'a', 1, 1, 'say\u0000hi');
      expect((await nodeRow(id, 'a')).prompt).toBe('say\uFFFDhi');
      await store.recordPrompt(id, 'a', 1, 2, 'other attempt');
      await store.recordPrompt(id, 'a', 2, 1, 'other launch');
      expect((await nodeRow(id, 'a')).prompt).toBe('say\uFFFDhi');
      await store.completeNode(id, 'a', 1, captured('ok'));
      await store.recordPrompt(id, 'a', 1, 1, 'after the end');
      expect((await nodeRow(id, 'a')).prompt).toBe('say\uFFFDhi');
    });
  });

  describe('completeNode', () => {
    it('writes the output and NODE_SUCCEEDED once, and only for a running node of that launch', async () => {
      const id = await newRun();
      expect(await store.completeNode(id, 'a', 1, captured('never ran'))).toBe(false);
      await store.startAttempt(id, 'a', 1, 1);
      expect(await store.completeNode(id, 'a', 2, captured('other launch'))).toBe(false);
      expect(await store.completeNode(id, 'a', 1, { output: 'h\u0000é', outputBytes: 99, truncated: true, exitCode: 3 })).toBe(true);
      expect(await store.completeNode(id, 'a', 1, captured('again'))).toBe(false);
      const row = await nodeRow(id, 'a');
      expect(row).toMatchObject({ status: 'SUCCEEDED', output: 'h\uFFFDé', output_bytes: '99', output_truncated: true, exit_code: 3, error: null });
      expect(row.completed_at).toBeInstanceOf(Date);
      expect((await events(id)).slice(1)).toEqual([
        { type: 'NODE_STARTED', payload: { runId: id, launch: 1, nodeId: 'a', attempt: 1 }, actor: null },
        { type: 'NODE_SUCCEEDED', payload: { runId: id, launch: 1, nodeId: 'a', exitCode: 3 }, actor: null },
      ]);
    });
  });

  describe('attemptFailed', () => {
    it('records each failed attempt once, with NODE_ATTEMPT_FAILED and its clipped error, and counts them', async () => {
      const id = await newRun();
      await store.startAttempt(id, 'a', 1, 1);
      const long = `${'e'.repeat(600)}\u0000`;
      expect(await store.attemptFailed(id, 'a', 1, 1, { output: 'o\u0000', outputBytes: 7, truncated: true, exitCode: 9, error: long })).toBe(1);
      const row = await nodeRow(id, 'a');
      expect(row).toMatchObject({ status: 'RUNNING', failures: 1, output: 'o\uFFFD', output_bytes: '7', output_truncated: true, exit_code: 9, error: `${'e'.repeat(600)}\uFFFD` });
      expect(row.completed_at).toBeInstanceOf(Date);
      // A retried activity: counted once.
      expect(await store.attemptFailed(id, 'a', 1, 1, { ...captured('x', 1), error: 'again' })).toBe(1);
      // Another attempt's report while attempt 1 is the node's: nothing, the count as it is.
      expect(await store.attemptFailed(id, 'a', 1, 2, { ...captured('x', 1), error: 'stray' })).toBe(1);
      await store.startAttempt(id, 'a', 1, 2);
      expect(await store.attemptFailed(id, 'a', 1, 2, { ...captured('x', null), error: 'second' })).toBe(2);
      expect((await events(id)).filter((e) => e.type === 'NODE_ATTEMPT_FAILED').map((e) => e.payload)).toEqual([
        { runId: id, launch: 1, nodeId: 'a', attempt: 1, exitCode: 9, error: `${'e'.repeat(499)}…` },
        { runId: id, launch: 1, nodeId: 'a', attempt: 2, exitCode: null, error: 'second' },
      ]);
      expect((await nodeRow(id, 'a')).error).toBe('second');
    });

    it('refuses an unknown node with NOT_FOUND', async () => {
      const id = await newRun();
      await expect(store.attemptFailed(id, 'ghost', 1, 1, { ...captured(''), error: 'e' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });
  });

  describe('settleNode', () => {
    it('settles a node with NODE_<status>, once; a settled node keeps its status and writes nothing', async () => {
      const id = await newRun();
      expect(await store.settleNode(id, 'side', 1, 'SKIPPED')).toBe(true);
      expect(await store.settleNode(id, 'side', 1, 'FAILED', { error: 'late' })).toBe(false);
      const row = await nodeRow(id, 'side');
      expect(row).toMatchObject({ status: 'SKIPPED', launch: 1, error: null, output: null });
      expect(row.completed_at).toBeInstanceOf(Date);
      expect((await events(id)).slice(1)).toEqual([{ type: 'NODE_SKIPPED', payload: { runId: id, launch: 1, nodeId: 'side' }, actor: null }]);
      for (const status of ['SUCCEEDED', 'FAILED', 'CANCELLED'] as const) {
        const other = await newRun();
        await store.settleNode(other, 'side', 1, status);
        expect(await store.settleNode(other, 'side', 1, 'SKIPPED')).toBe(false);
        expect((await nodeRow(other, 'side')).status).toBe(status);
        expect(await types(other)).toEqual(['RUN_STARTED', `NODE_${status}`]);
      }
    });

    it('keeps the output, error and end of a failed attempt unless new ones are given', async () => {
      const id = await newRun();
      await store.startAttempt(id, 'a', 1, 1);
      await store.attemptFailed(id, 'a', 1, 1, { ...captured('attempt output', 1), error: 'exit 1' });
      const failedAt = (await nodeRow(id, 'a')).completed_at;
      await sql('SELECT pg_sleep(0.01)');
      expect(await store.settleNode(id, 'a', 1, 'FAILED')).toBe(true);
      expect(await nodeRow(id, 'a')).toMatchObject({ status: 'FAILED', output: 'attempt output', error: 'exit 1', completed_at: failedAt });

      await store.startAttempt(id, 'b', 1, 1);
      await store.settleNode(id, 'b', 1, 'FAILED', { error: `${'w'.repeat(501)}\u0000`, output: 'new\u0000' });
      expect(await nodeRow(id, 'b')).toMatchObject({ status: 'FAILED', output: 'new\uFFFD', error: `${'w'.repeat(501)}\uFFFD` });
      expect((await events(id)).filter((e) => e.type === 'NODE_FAILED').map((e) => e.payload)).toEqual([
        { runId: id, launch: 1, nodeId: 'a' },
        { runId: id, launch: 1, nodeId: 'b', error: `${'w'.repeat(499)}…` },
      ]);
    });

    it('puts no error in the event when the error is empty, and settles a waiting node', async () => {
      const id = await newRun();
      await store.openGate(id, 'gate', 1, randomUUID(), 'Ship it?', []);
      expect(await store.settleNode(id, 'gate', 1, 'CANCELLED', { error: '' })).toBe(true);
      expect(await nodeRow(id, 'gate')).toMatchObject({ status: 'CANCELLED', error: '' });
      expect((await events(id)).slice(-1)[0]).toEqual({ type: 'NODE_CANCELLED', payload: { runId: id, launch: 1, nodeId: 'gate' }, actor: null });
    });
  });

  describe('openGate and closeGate', () => {
    const pauses = (runId: string) =>
      sql<{ pause_id: string; node_id: string; launch: number; prompt: string; artifacts: unknown; closed_by: string | null; decision: string | null }>(
        'SELECT pause_id, node_id, launch, prompt, artifacts, closed_by, decision FROM run_pauses WHERE run_id = $1 ORDER BY opened_at',
        [runId],
      );

    it('opens a gate once: the pause, the node WAITING (NODE_WAITING) and the run PAUSED (RUN_PAUSED)', async () => {
      const id = await newRun();
      await store.startAttempt(id, 'gate', 1, 4);
      await sql(`UPDATE run_nodes SET error = 'old', completed_at = now() WHERE run_id = $1 AND node_id = 'gate'`, [id]);
      const pauseId = randomUUID();
      await store.openGate(id, 'gate', 1, pauseId, 'Ship\u0000it?', [{ path: 'a.txt' }, { path: 'b.txt' }]);
      await store.openGate(id, 'gate', 1, pauseId, 'Ship it?', []);
      expect(await pauses(id)).toEqual([
        { pause_id: pauseId, node_id: 'gate', launch: 1, prompt: 'Ship\uFFFDit?', artifacts: [{ path: 'a.txt' }, { path: 'b.txt' }], closed_by: null, decision: null },
      ]);
      expect(await nodeRow(id, 'gate')).toMatchObject({ status: 'WAITING', launch: 1, attempt: 5, error: null, completed_at: null });
      expect((await runRow(id)).status).toBe('PAUSED');
      expect((await events(id)).slice(2)).toEqual([
        { type: 'NODE_WAITING', payload: { runId: id, launch: 1, nodeId: 'gate', pauseId }, actor: null },
        { type: 'RUN_PAUSED', payload: { runId: id, launch: 1, nodeId: 'gate', pauseId }, actor: null },
      ]);
      const [approval] = (await new ApprovalReader(state.dataSource).page({ status: 'OPEN' }, null, 500)).filter((a) => a.runId === id);
      expect(approval).toMatchObject({ kind: 'RUN_GATE', detail: { runId: id, nodeId: 'gate', pauseId, launch: 1, workflowName: 'store-spec', artifacts: 2 } });
    });

    it('answers a gate once: the decision, the node, APPROVAL_ANSWERED with the actor, NODE_SUCCEEDED and RUN_RESUMED', async () => {
      const id = await newRun();
      const pauseId = randomUUID();
      await store.openGate(id, 'gate', 1, pauseId, 'Ship it?', []);
      const actor = { subject: 'user:ops', kind: 'token' as const };
      expect(await store.closeGate(id, pauseId, { text: 'apprové', decision: 'approved', outcome: 'SUCCEEDED', actor })).toEqual({
        recorded: true,
        decision: 'apprové',
        closedBy: 'answer',
      });
      expect(await store.closeGate(id, pauseId, { text: 'no', decision: 'feedback', outcome: 'FAILED' })).toEqual({ recorded: false, decision: 'apprové', closedBy: 'answer' });
      expect((await pauses(id))[0]).toMatchObject({ closed_by: 'answer', decision: 'apprové' });
      const [times] = await sql<{ answered_at: Date | null; closed_at: Date | null }>('SELECT answered_at, closed_at FROM run_pauses WHERE pause_id = $1', [pauseId]);
      expect(times!.answered_at).toBeInstanceOf(Date);
      expect(times!.closed_at).toBeInstanceOf(Date);
      expect(await nodeRow(id, 'gate')).toMatchObject({ status: 'SUCCEEDED', output: 'apprové', output_bytes: '8', output_truncated: false, error: null });
      expect((await nodeRow(id, 'gate')).completed_at).toBeInstanceOf(Date);
      expect((await runRow(id)).status).toBe('RUNNING');
      expect((await events(id)).slice(3)).toEqual([
        { type: 'APPROVAL_ANSWERED', payload: { runId: id, launch: 1, nodeId: 'gate', pauseId, decision: 'approved' }, actor },
        { type: 'NODE_SUCCEEDED', payload: { runId: id, launch: 1, nodeId: 'gate' }, actor: null },
        { type: 'RUN_RESUMED', payload: { runId: id, launch: 1, nodeId: 'gate', pauseId }, actor: null },
      ]);
    });

    it('records feedback as the node FAILED with its error, and a DENY in the inbox', async () => {
      const id = await newRun();
      const pauseId = randomUUID();
      await store.openGate(id, 'gate', 1, pauseId, 'Ship it?', []);
      const long = 'r'.repeat(600);
      await store.closeGate(id, pauseId, { text: 'not yet', decision: 'feedback', outcome: 'FAILED', error: long });
      expect(await nodeRow(id, 'gate')).toMatchObject({ status: 'FAILED', output: 'not yet', error: long });
      expect((await events(id)).slice(3).map((e) => [e.type, e.payload, e.actor])).toEqual([
        ['APPROVAL_ANSWERED', { runId: id, launch: 1, nodeId: 'gate', pauseId, decision: 'feedback' }, null],
        ['NODE_FAILED', { runId: id, launch: 1, nodeId: 'gate', error: `${'r'.repeat(499)}…` }, null],
        ['RUN_RESUMED', { runId: id, launch: 1, nodeId: 'gate', pauseId }, null],
      ]);
      const [approval] = (await new ApprovalReader(state.dataSource).page({}, null, 500)).filter((a) => a.runId === id);
      expect(approval).toMatchObject({ status: 'ANSWERED', decision: 'DENY', answer: 'not yet' });
    });

    it('pauses the run once for two gates and resumes it only when the last one is answered', async () => {
      const id = await newRun();
      const [p1, p2] = [randomUUID(), randomUUID()];
      await store.openGate(id, 'gate', 1, p1, 'one', []);
      await store.openGate(id, 'b', 1, p2, 'two', []);
      expect(await types(id)).toEqual(['RUN_STARTED', 'NODE_WAITING', 'RUN_PAUSED', 'NODE_WAITING']);
      await store.closeGate(id, p1, { text: 'approve', decision: 'approved', outcome: 'SUCCEEDED' });
      expect((await runRow(id)).status).toBe('PAUSED');
      expect((await types(id)).slice(4)).toEqual(['APPROVAL_ANSWERED', 'NODE_SUCCEEDED']);
      await store.closeGate(id, p2, { text: 'approve', decision: 'approved', outcome: 'SUCCEEDED' });
      expect((await runRow(id)).status).toBe('RUNNING');
      expect((await types(id)).slice(6)).toEqual(['APPROVAL_ANSWERED', 'NODE_SUCCEEDED', 'RUN_RESUMED']);
    });

    it('neither pauses nor resumes a run that is not running: a gate opened after the run ended', async () => {
      const id = await newRun();
      await store.finishRun(id, 1, 'FAILED', 'ended');
      const pauseId = randomUUID();
      await store.openGate(id, 'gate', 1, pauseId, 'late', []);
      expect((await runRow(id)).status).toBe('FAILED');
      await store.closeGate(id, pauseId, { text: 'approve', decision: 'approved', outcome: 'SUCCEEDED' });
      expect((await runRow(id)).status).toBe('FAILED');
      expect(await types(id)).toEqual(['RUN_STARTED', 'RUN_FAILED', 'NODE_WAITING', 'APPROVAL_ANSWERED', 'NODE_SUCCEEDED']);
    });

    it("refuses a pause the run does not have with NOT_FOUND, another run's included", async () => {
      const id = await newRun();
      const other = await newRun();
      const pauseId = randomUUID();
      await store.openGate(other, 'gate', 1, pauseId, 'theirs', []);
      await expect(store.closeGate(id, pauseId, { text: 'approve', decision: 'approved', outcome: 'SUCCEEDED' })).rejects.toMatchObject({
        code: 'NOT_FOUND',
        message: `run ${id} has no pause "${pauseId}"`,
      });
      expect((await pauses(other))[0]!.closed_by).toBeNull();
      expect(await types(id)).toEqual(['RUN_STARTED']);
    });
  });

  describe('finishRun and failToStart', () => {
    it("ends the launch once with RUN_<status>, the run's error and end", async () => {
      const id = await newRun();
      const before = await store.getRun(id);
      expect(await store.finishRun(id, 1, 'SUCCEEDED')).toEqual({ changed: true, run: { ...before, status: 'SUCCEEDED' } });
      const again = await store.finishRun(id, 1, 'FAILED', 'late');
      expect(again).toEqual({ changed: false, run: { ...before, status: 'SUCCEEDED' } });
      const row = await runRow(id);
      expect(row).toMatchObject({ status: 'SUCCEEDED', error: null });
      expect(row.completed_at).toBeInstanceOf(Date);
      expect((await events(id)).slice(1)).toEqual([{ type: 'RUN_SUCCEEDED', payload: { runId: id, launch: 1 }, actor: null }]);
    });

    it('leaves a run alone when asked to finish a launch it is not at', async () => {
      const id = await newRun();
      expect((await store.finishRun(id, 2, 'CANCELLED')).changed).toBe(false);
      expect(await runRow(id)).toMatchObject({ status: 'RUNNING', completed_at: null });
      expect(await types(id)).toEqual(['RUN_STARTED']);
    });

    it("closes open gates with the run: their waiting nodes CANCELLED (NODE_CANCELLED), then RUN_FAILED with the clipped error", async () => {
      const id = await newRun();
      const [p1, p2] = [randomUUID(), randomUUID()];
      await store.openGate(id, 'gate', 1, p1, 'one', []);
      await store.openGate(id, 'b', 1, p2, 'two', []);
      // b's gate is open but b was settled already: no second event for it.
      await store.settleNode(id, 'b', 1, 'CANCELLED');
      const error = `${'f'.repeat(600)}\u0000`;
      expect((await store.finishRun(id, 1, 'FAILED', error)).changed).toBe(true);
      expect((await sql<{ closed_by: string }>('SELECT closed_by FROM run_pauses WHERE run_id = $1', [id])).map((p) => p.closed_by)).toEqual(['failed', 'failed']);
      expect(await nodeRow(id, 'gate')).toMatchObject({ status: 'CANCELLED', error: 'the gate closed: the run failed' });
      expect((await nodeRow(id, 'gate')).completed_at).toBeInstanceOf(Date);
      expect(await nodeRow(id, 'b')).toMatchObject({ status: 'CANCELLED', error: null });
      expect(await runRow(id)).toMatchObject({ status: 'FAILED', error: `${'f'.repeat(600)}\uFFFD` });
      expect((await events(id)).slice(5).map((e) => [e.type, e.payload])).toEqual([
        ['NODE_CANCELLED', { runId: id, launch: 1, nodeId: 'gate' }],
        ['RUN_FAILED', { runId: id, launch: 1, error: `${'f'.repeat(499)}…` }],
      ]);
      const approvals = (await new ApprovalReader(state.dataSource).page({}, null, 500)).filter((a) => a.runId === id);
      expect(approvals.map((a) => [a.status, a.closeReason])).toEqual([
        ['CANCELLED', 'the run failed'],
        ['CANCELLED', 'the run failed'],
      ]);
    });

    it('a cancelled run closes its gates as cancelled; a policy ask expires only when its run is cancelled', async () => {
      const id = await newRun();
      await store.openGate(id, 'gate', 1, randomUUID(), 'one', []);
      await store.finishRun(id, 1, 'CANCELLED');
      expect((await sql<{ closed_by: string }>('SELECT closed_by FROM run_pauses WHERE run_id = $1', [id]))[0]!.closed_by).toBe('cancelled');
      expect((await nodeRow(id, 'gate')).error).toBe('the gate closed: the run cancelled');

      const ask = await newRun({ workflowName: 'policy-approval' });
      await store.openGate(ask, 'gate', 1, randomUUID(), 'ask', []);
      await store.finishRun(ask, 1, 'FAILED', 'broke');
      const [approval] = (await new ApprovalReader(state.dataSource).page({}, null, 500)).filter((a) => a.runId === ask);
      expect(approval).toMatchObject({ kind: 'POLICY_ASK', status: 'CANCELLED', closeReason: 'the run failed' });
    });

    it('stores the released checkout when given and keeps the recorded one otherwise', async () => {
      const id = await newRun();
      const leased = { leaseId: 'l1', path: '/w/l1', branch: 'run/x', worktreeEstablished: true };
      await store.setCheckout(id, leased);
      await store.setCwd(id, '/w/l1');
      expect(await store.getRun(id)).toMatchObject({ checkout: leased, cwd: '/w/l1' });
      await store.finishRun(id, 1, 'CANCELLED');
      expect((await store.getRun(id))!.checkout).toEqual(leased);

      const other = await newRun();
      const released = { leaseId: null, path: null, branch: 'run/y', worktreeEstablished: false };
      await store.setCheckout(other, leased);
      await store.finishRun(other, 1, 'SUCCEEDED', undefined, released);
      expect((await store.getRun(other))!.checkout).toEqual(released);
    });

    it('failToStart fails the launch with the reason', async () => {
      const id = await newRun({ open: false });
      await store.failToStart(id, 1, 'no worker');
      expect(await runRow(id)).toMatchObject({ status: 'FAILED', error: 'the run could not start: no worker' });
      expect(await events(id)).toEqual([{ type: 'RUN_FAILED', payload: { runId: id, launch: 1, error: 'the run could not start: no worker' }, actor: null }]);
    });
  });

  describe('prepareResume', () => {
    it('moves a FAILED run to its next launch, RUNNING, with every node that did not complete PENDING again', async () => {
      const id = await newRun();
      await store.startAttempt(id, 'a', 1, 1);
      await store.completeNode(id, 'a', 1, captured('ok'));
      await store.settleNode(id, 'side', 1, 'SKIPPED');
      await store.startAttempt(id, 'b', 1, 1);
      await store.attemptFailed(id, 'b', 1, 1, { ...captured('x', 1), error: 'e' });
      await store.settleNode(id, 'b', 1, 'FAILED');
      await store.finishRun(id, 1, 'FAILED', 'b failed');
      const before = await store.getRun(id);
      const eventsBefore = await types(id);
      expect(await store.prepareResume(id)).toEqual({ ...before, launch: 2, status: 'RUNNING' });
      expect(await runRow(id)).toMatchObject({ status: 'RUNNING', launch: 2, error: null, completed_at: null });
      expect(await sql('SELECT node_id, status, failures FROM run_nodes WHERE run_id = $1 ORDER BY position', [id])).toEqual([
        { node_id: 'a', status: 'SUCCEEDED', failures: 0 },
        { node_id: 'b', status: 'PENDING', failures: 0 },
        { node_id: 'gate', status: 'PENDING', failures: 0 },
        { node_id: 'side', status: 'SKIPPED', failures: 0 },
      ]);
      expect(await types(id)).toEqual(eventsBefore);
    });

    it('resumes a CANCELLED run too', async () => {
      const id = await newRun();
      await store.finishRun(id, 1, 'CANCELLED');
      expect(await store.prepareResume(id)).toMatchObject({ launch: 2, status: 'RUNNING' });
    });

    it('refuses a RUNNING, PAUSED or SUCCEEDED run with CONFLICT, changing nothing', async () => {
      const running = await newRun();
      const paused = await newRun();
      await store.openGate(paused, 'gate', 1, randomUUID(), 'p', []);
      const done = await newRun();
      await store.finishRun(done, 1, 'SUCCEEDED');
      for (const [id, status] of [
        [running, 'RUNNING'],
        [paused, 'PAUSED'],
        [done, 'SUCCEEDED'],
      ] as const) {
        await expect(store.prepareResume(id)).rejects.toMatchObject({ code: 'CONFLICT', message: `run ${id} is ${status}; only a FAILED or CANCELLED run can be resumed` });
        expect(await runRow(id)).toMatchObject({ status, launch: 1 });
      }
      await expect(store.prepareResume(randomUUID())).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });
  });
});
