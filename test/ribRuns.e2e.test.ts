import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { RibHost, RibWarning } from '@keelson/host';
import { HOLDER_STOPPED, POLICY_APPROVAL_NODE, POLICY_APPROVAL_WORKFLOW, searchAttributes } from '@keelson/schema';
import { silentLogger } from '@keelson/service';
import type { MessageChunk, Rib, RibContext, RibRunEvent } from '@keelson/ribs-contract';
import { runsPortOf } from '@keelson/runs';
import { ribsSettings, startRibsSubgraph as startRibs, type RunningRibs } from '@keelson/subgraph-ribs';
import { findTemporalCli } from '@keelson/temporal';
import { z } from 'zod';
import { gql, gqlData, subscribe } from './support/client';
import { startTestMesh, type TestMesh } from './support/mesh';
import { quietTemporalRuntime } from './support/temporalServer';
import { until } from './support/until';

quietTemporalRuntime();
const exec = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const gated = (name: string) => ({
  name,
  description: 'A step, a human gate, a last step.',
  nodes: [
    { id: 'prep', type: 'bash', bash: 'echo prepared' },
    { id: 'gate', type: 'approval', depends_on: ['prep'], prompt: `Ship ${name}?` },
    { id: 'ship', type: 'bash', depends_on: ['gate'], bash: 'echo shipped' },
  ],
});

/** The lab rib: a bound board workflow, two gated workflows, a composed region with a cadence, events recorded. */
const lab = {
  events: [] as RibRunEvent[],
  composed: [] as number[],
};
const labRib: Rib = {
  id: 'lab',
  displayName: 'Lab',
  registerTools(ctx) {
    ctx.getSnapshotManager!().register('rib:lab:ticks', () => {
      lab.composed.push(Date.now());
      return { n: lab.composed.length };
    });
    return [];
  },
  surfaces: [
    {
      id: 'lab',
      title: 'Lab',
      layout: {
        rows: [
          {
            columns: [
              { key: 'rib:lab:ticks', cadenceMs: 30_000, title: 'Ticks' },
              { key: 'rib:lab:board', workflow: 'lab-board', cadenceMs: 30_000, serverRefresh: false },
              { key: 'rib:lab:item', workflow: 'lab-board', workflowArgs: { count: '3' }, cadenceMs: 30_000 },
            ],
          },
        ],
      },
    },
  ],
  contributeWorkflows: () => [
    {
      definition: {
        name: 'lab-board',
        inputs: { count: { default: '1' } },
        nodes: [{ id: 'emit', type: 'bash', bash: 'printf \'{"count": "%s"}\' "$KEELSON_INPUT_COUNT"' }],
      },
      bindSnapshotKey: 'rib:lab:board',
      validate: (data) => z.object({ count: z.coerce.number().int() }).parse(data),
    },
    { definition: gated('lab-gated') },
    { definition: gated('lab-other') },
  ],
  onRunEvent: (event) => {
    lab.events.push(event);
  },
};

/** The peer rib holds no grants; its policy asks the operator before anyone starts `lab-asked`. */
const peerRib: Rib = {
  id: 'peer',
  displayName: 'Peer',
  contributeWorkflows: () => [{ definition: { name: 'lab-asked', nodes: [{ id: 'a', type: 'bash', bash: 'echo asked' }] } }],
  contributePolicies: () => [
    {
      id: 'ask-for-lab-asked',
      on: [{ phase: 'tool_call', tool: 'workflow_run' }],
      evaluate: (event) =>
        event.phase === 'tool_call' && (event.args as { name?: string }).name === 'lab-asked' ? { outcome: 'ask', reason: 'lab-asked needs a human' } : { outcome: 'allow' },
    },
  ],
};

async function callTool(host: RibHost, name: string, input: unknown): Promise<{ content: string; isError: boolean }> {
  const chunks: MessageChunk[] = [];
  await host.executeTool({ name, input, surface: 'chat', onChunk: (c) => chunks.push(c) });
  const result = chunks.find((c) => c.type === 'tool_result') as { content: string; isError?: boolean } | undefined;
  return { content: result?.content ?? '', isError: result?.isError === true };
}

describe('the run seams of ribs, on the real stack', () => {
  let mesh: TestMesh;
  let home: string;
  const warnings: RibWarning[] = [];
  let cli: string;
  /** The contexts the ribs subgraph's host gives its ribs (the run seams live there). */
  const ctxOf = (ribId: string): RibContext => mesh.ribs.host.context(ribId)!;

  const temporalList = async (query: string): Promise<string[]> => {
    const { stdout } = await exec(cli, ['workflow', 'list', '--address', mesh.temporal.address, '--query', query, '-o', 'json']);
    return (stdout.trim() ? (JSON.parse(stdout) as { execution: { workflowId: string } }[]) : []).map((r) => r.execution.workflowId);
  };

  beforeAll(async () => {
    cli = (await findTemporalCli())!;
    home = await mkdtemp(join(tmpdir(), 'keelson-ribruns-'));
    await writeFile(join(home, 'config.json'), JSON.stringify({ ribWorkflowGrants: { lab: ['lab-gated', 'lab-board'] }, ribApprovalGrants: { lab: ['lab-gated'] } }));
    mesh = await startTestMesh(
      {
        KEELSON_HOME: home,
        KEELSON_RUN_HEARTBEAT_TIMEOUT_MS: '3000',
        // Unioned with the config file's grants.
        KEELSON_RIB_WORKFLOW_GRANTS: 'lab:lab-other,lab-asked',
        KEELSON_RIB_APPROVAL_GRANTS: 'lab:lab-board',
      },
      {
        ribHost: { available: { lab: labRib, peer: peerRib }, onWarning: (w) => warnings.push(w) },
        // Test-only: every region interval ×1/30, so the 30 s cadence runs every second while watched.
        ribRuns: { refresh: { timeScale: 1 / 30 } },
      },
    );
  });

  afterAll(async () => {
    await mesh?.teardown();
    await rm(home, { recursive: true, force: true });
  });

  it('starts only granted workflows (config ∪ env), follows a paused-then-answered run through onRunEvent, and answers gates only with the approval grant', async () => {
    const labCtx = ctxOf('lab');
    const peerCtx = ctxOf('peer');
    await expect(peerCtx.startWorkflow!('lab-gated')).rejects.toMatchObject({ message: expect.stringMatching(/no grant in ribWorkflowGrants/) });
    await expect(labCtx.startWorkflow!('no-such-workflow')).rejects.toMatchObject({ message: expect.stringMatching(/no grant/) });

    const { runId } = await labCtx.startWorkflow!('lab-gated'); // granted by the config file
    const paused = await until('the run pauses', () => labCtx.getRunStatus!(runId), (s) => s?.status === 'paused');
    expect(paused!.pendingApproval).toMatchObject({ nodeId: 'gate', prompt: 'Ship lab-gated?', pauseId: expect.any(String) });
    expect(paused!.checkout).toEqual({ path: null, branch: null, worktreeEstablished: false });
    expect(await peerCtx.getRunStatus!(runId)).toBeUndefined();

    await expect(peerCtx.respondToRun!(runId, 'gate', 'approve')).resolves.toEqual({ ok: false, error: `run ${runId} was not started by rib 'peer'` });
    await expect(labCtx.respondToRun!(runId, 'gate', 'approve', 'stale-pause')).resolves.toMatchObject({ ok: false, error: expect.stringMatching(/stale/) });
    await expect(labCtx.respondToRun!(runId, 'gate', 'approve', paused!.pendingApproval!.pauseId)).resolves.toEqual({ ok: true });
    await until('the run succeeds', () => labCtx.getRunStatus!(runId), (s) => s?.status === 'succeeded');

    const mine = await until('four events', () => lab.events.filter((e) => e.runId === runId), (e) => e.length >= 4);
    expect(mine.map((e) => e.status)).toEqual(['running', 'paused', 'running', 'succeeded']);
    expect(mine[1]).toMatchObject({ workflowName: 'lab-gated', startedByRibId: 'lab', pendingApproval: { nodeId: 'gate', prompt: 'Ship lab-gated?' } });
    expect(mine[3]!.completedAt).toEqual(expect.any(String));

    // Started by the env grant; its gates need an approval grant lab does not hold.
    const other = await labCtx.startWorkflow!('lab-other');
    const otherPaused = await until('lab-other pauses', () => labCtx.getRunStatus!(other.runId), (s) => s?.status === 'paused');
    await expect(labCtx.respondToRun!(other.runId, 'gate', 'approve', otherPaused!.pendingApproval!.pauseId)).resolves.toEqual({
      ok: false,
      error: "rib 'lab' may not answer the gates of workflow 'lab-other': no grant in ribApprovalGrants or KEELSON_RIB_APPROVAL_GRANTS",
    });
    await expect(peerCtx.cancelRun!(other.runId)).resolves.toMatchObject({ ok: false });
    await expect(labCtx.cancelRun!(other.runId)).resolves.toEqual({ ok: true });
    await until('lab-other is cancelled', () => labCtx.getRunStatus!(other.runId), (s) => s?.status === 'cancelled');
    await expect(labCtx.cancelRun!(other.runId)).resolves.toEqual({ ok: false, error: `run ${other.runId} already CANCELLED` });

    // Rib.workflows: the rib's contributions reach the runs catalog.
    const { rib } = await gqlData<{ rib: { workflows: { name: string; ribId: string }[] } }>(mesh.gatewayUrl, '{ rib(id: "lab") { workflows { name ribId } } }');
    expect(rib.workflows.map((w) => w.name).sort()).toEqual(['lab-board', 'lab-gated', 'lab-other']);
  });

  it('turns a policy ask into a policy-approval gate the operator answers with respondToRun', async () => {
    const starting = ctxOf('lab').startWorkflow!('lab-asked');
    const approval = await until(
      'the approval run',
      async () => (await gqlData<{ runs: { edges: { node: { id: string; status: string; pendingApproval: { nodeId: string; pauseId: string; prompt: string } | null } }[] } }>(
        mesh.gatewayUrl,
        `{ runs(workflowName: "${POLICY_APPROVAL_WORKFLOW}", first: 5) { edges { node { id status pendingApproval { nodeId pauseId prompt } } } } }`,
      )).runs.edges.map((e) => e.node),
      (runs) => runs.some((r) => r.status === 'PAUSED'),
    );
    const gate = approval.find((r) => r.status === 'PAUSED')!;
    expect(gate.pendingApproval).toMatchObject({ nodeId: POLICY_APPROVAL_NODE, prompt: expect.stringMatching(/Policy peer:ask-for-lab-asked asks before rib 'lab' uses tool 'workflow_run'[\s\S]*lab-asked needs a human/) });
    const answer = await gqlData<{ respondToRun: { ok: boolean } }>(
      mesh.gatewayUrl,
      'mutation ($r: ID!, $n: String!, $p: String) { respondToRun(runId: $r, nodeId: $n, text: "approve", pauseId: $p) { ok } }',
      { r: gate.id, n: POLICY_APPROVAL_NODE, p: gate.pendingApproval!.pauseId },
    );
    expect(answer.respondToRun.ok).toBe(true);
    const { runId } = await starting;
    await until('lab-asked succeeds', () => ctxOf('lab').getRunStatus!(runId), (s) => s === undefined || s.status === 'succeeded');
  });

  it('publishes a bound workflow\'s validated output and keeps the prior snapshot when validate fails; runWorkflow runs an in-memory definition', async () => {
    const labCtx = ctxOf('lab');
    await labCtx.refreshWorkflow!('lab-board', { count: '2' });
    expect(await mesh.ribs.host.readSnapshot('rib:lab:board')).toMatchObject({ version: 1, payload: { count: 2 } });
    await labCtx.refreshWorkflow!('lab-board', { count: 'many' });
    expect(await mesh.ribs.host.readSnapshot('rib:lab:board')).toMatchObject({ version: 1, payload: { count: 2 } });
    expect(warnings.some((w) => w.rule === 'snapshot-validator' && w.message.includes('rib:lab:board'))).toBe(true);
    await expect(labCtx.refreshWorkflow!('not-a-workflow')).resolves.toBeUndefined();

    const inline = await labCtx.runWorkflow!({ name: 'inline-hello', nodes: [{ id: 'say', type: 'bash', bash: 'echo "hello $KEELSON_INPUT_WHO"' }] }, { who: 'lab' });
    expect(inline).toEqual({ status: 'succeeded', nodes: { say: { state: 'succeeded', output: 'hello lab\n' } } });
    const isolated = await labCtx.runWorkflow!({ name: 'inline-iso', worktree: { enabled: true }, nodes: [{ id: 'x', type: 'bash', bash: 'touch never' }] });
    expect(isolated).toMatchObject({ status: 'failed', nodes: {} });
    const { runs } = await gqlData<{ runs: { edges: unknown[] } }>(mesh.gatewayUrl, '{ runs(workflowName: "inline-iso") { edges { cursor } } }');
    expect(runs.edges).toEqual([]);
  });

  it('registers a durable op: handle at once, frames and result persisted, steer reaches onSteer, cancel aborts the signal, and operators find it by KeelsonRib', async () => {
    const labCtx = ctxOf('lab');
    const steered: string[] = [];
    const op = labCtx.registerOp!({ kind: 'lab.count', title: 'Count to three', onSteer: (note) => void steered.push(note) });
    for (let i = 1; i <= 3; i++) {
      op.log(`step ${i}`);
      op.progress({ fraction: i / 3 });
    }
    const steer = (id: string, note: string) => gql<{ steerOp: { status: string } }>(mesh.gatewayUrl, 'mutation ($id: ID!, $n: String!) { steerOp(id: $id, note: $n) { status } }', { id, n: note });
    // OP_STARTED is written once the op's workflow exists: from then on a steer reaches it.
    await until('the op started', () => mesh.runs.services.events.read('ops', 0, { key: op.id }), (f) => f.some((e) => e.type === 'OP_STARTED'));
    expect((await steer(op.id, 'faster')).errors).toBeUndefined();
    await until('the steer reaches onSteer', () => steered, (s) => s.length === 1);
    op.done({ counted: 3 });
    const done = await until('the op succeeds', () => mesh.runs.services.ops.require(op.id), (o) => o.status !== 'RUNNING');
    expect(done).toMatchObject({ status: 'SUCCEEDED', result: { counted: 3 }, ribId: 'lab', kind: 'lab.count', title: 'Count to three', steerable: true });
    expect(done.temporalWorkflowId).toMatch(/^op-lab\.count-[0-9a-f]{8}$/);
    const events = await callTool(mesh.ribs.host, 'run_events', { id: op.id });
    expect(events.content.split('\n').map((l) => l.split(' ')[2])).toEqual([
      'OP_STARTED',
      'OP_LOG',
      'OP_PROGRESS',
      'OP_LOG',
      'OP_PROGRESS',
      'OP_LOG',
      'OP_PROGRESS',
      'OP_STEERED',
      'OP_SUCCEEDED',
    ]);
    const late = await steer(op.id, 'too late');
    expect(late.errors?.[0]).toMatchObject({ message: `op ${op.id} is SUCCEEDED; a finished op cannot be steered`, extensions: { code: 'CONFLICT' } });
    expect(await callTool(mesh.ribs.host, 'run_steer', { id: op.id, note: 'late' })).toEqual({ isError: true, content: `op ${op.id} is SUCCEEDED; a finished op cannot be steered` });
    expect(JSON.parse((await callTool(mesh.ribs.host, 'run_status', { id: op.id })).content)).toMatchObject({ kind: 'op', status: 'SUCCEEDED', result: { counted: 3 } });

    const long = labCtx.registerOp!({ kind: 'lab.wait' });
    await until('the second op runs', () => mesh.runs.services.ops.byIds([long.id]), (ops) => ops.length === 1);
    await sleep(300);
    expect(await callTool(mesh.ribs.host, 'run_cancel', { id: long.id })).toMatchObject({ isError: false });
    await until('the signal aborts', () => long.signal.aborted, (a) => a, 10_000);
    const cancelled = await until('the op is cancelled', () => mesh.runs.services.ops.require(long.id), (o) => o.status !== 'RUNNING');
    expect(cancelled).toMatchObject({ status: 'CANCELLED', error: 'cancelled by request' });
    long.done('ignored');

    const query = `${searchAttributes.rib}='lab' AND ${searchAttributes.kind}='op'`;
    const listed = await until('the CLI lists both ops', () => temporalList(query), (ids) => ids.includes(done.temporalWorkflowId) && ids.includes(cancelled.temporalWorkflowId), 15_000);
    expect(listed).toEqual(expect.arrayContaining([done.temporalWorkflowId, cancelled.temporalWorkflowId]));
    const { stdout } = await exec(cli, ['workflow', 'describe', '--address', mesh.temporal.address, '--workflow-id', done.temporalWorkflowId, '-o', 'json']);
    expect(stdout).toContain('Count to three');
  });

  it('keeps an op readable across a restart of the ribs subgraph that registered it, settled FAILED "registering process stopped"', async () => {
    const soloRib: Rib = { id: 'solo', displayName: 'Solo' };
    const boot = (): Promise<RunningRibs> =>
      startRibs({
        databaseUrl: mesh.db.url,
        host: '127.0.0.1',
        port: 0,
        security: mesh.security,
        settings: { ...ribsSettings(mesh.env, homedir(), mesh.rawEnv), projectsUrl: mesh.projects.url },
        log: silentLogger(),
        ribHost: { available: { solo: soloRib } },
        runs: {
          runs: () => runsPortOf(mesh.runs.services),
          temporal: { address: mesh.temporal.address, namespace: mesh.temporal.namespace, taskQueue: mesh.env.TEMPORAL_TASK_QUEUE },
          heartbeatTimeoutMs: 3000,
          refresh: false,
        },
      });
    let first: RunningRibs | undefined = await boot();
    let second: RunningRibs | undefined;
    try {
      const steered: string[] = [];
      const op = first.host.context('solo')!.registerOp!({ kind: 'solo.job', title: 'Long job', onSteer: (n) => void steered.push(n) });
      op.log('working before the restart');
      await until('the frame is written', () => mesh.runs.services.events.read(`ops`, 0, { key: op.id }), (f) => f.some((e) => e.type === 'OP_LOG'));
      // Its holder activity runs in this process now; a second op's hold may not have reached it yet.
      await until('the hold is taken', () => first!.services.runtime!.ribRuns.liveOps.untaken(), (ids) => ids.length === 0);
      const young = first.host.context('solo')!.registerOp!({ kind: 'solo.young' });
      await first.stop();
      first = undefined;
      expect(op.signal.aborted).toBe(true);
      expect(young.signal.aborted).toBe(true);
      for (const id of [op.id, young.id]) {
        const failed = await until('the op settles', () => mesh.runs.services.ops.require(id), (o) => o.status !== 'RUNNING', 10_000);
        expect(failed).toMatchObject({ status: 'FAILED', error: HOLDER_STOPPED });
      }

      second = await boot();
      const status = JSON.parse((await callTool(second.host, 'run_status', { id: op.id })).content);
      expect(status).toMatchObject({ kind: 'op', status: 'FAILED', error: HOLDER_STOPPED, title: 'Long job' });
      const frames = (await callTool(second.host, 'run_events', { id: op.id })).content;
      expect(frames).toMatch(/OP_STARTED[\s\S]*OP_LOG \{[^}]*"line":"working before the restart"[\s\S]*OP_FAILED/);
      expect(await callTool(second.host, 'run_steer', { id: op.id, note: 'still there?' })).toEqual({ isError: true, content: `op ${op.id} is FAILED; a finished op cannot be steered` });
      expect(steered).toEqual([]);
    } finally {
      await first?.stop();
      await second?.stop();
    }
  });

  it('refreshes a watched region on its cadence through Temporal, six times slower while idle; serverRefresh: false and args-bearing regions get no heartbeat', async () => {
    const heartbeat = mesh.ribs.services.runtime!.heartbeat!;
    expect(heartbeat.plans().map((p) => [p.key, p.liveIntervalMs, p.idleIntervalMs])).toEqual([['rib:lab:ticks', 1000, 6000]]);
    expect(warnings.find((w) => w.rule === 'refresh-args')?.message).toMatch(/rib:lab:item/);
    const listed = await until('the CLI lists the heartbeat', () => temporalList(`${searchAttributes.kind}='refresh' AND ${searchAttributes.rib}='lab'`), (ids) => ids.length > 0, 15_000);
    expect(listed).toEqual([heartbeat.workflowId('rib:lab:ticks')]);

    const frames = subscribe<{ snapshotFrames: { key: string; version: number; payload: { n: number } } }>(
      mesh.gatewayWsUrl,
      'subscription { snapshotFrames(keys: ["rib:lab:ticks"]) { key version payload } }',
    );
    const watchedFrom = Date.now();
    const seen = await frames.take(3, 10_000);
    const watchedFor = Date.now() - watchedFrom;
    expect(seen.map((r) => r.data!.snapshotFrames.key)).toEqual(['rib:lab:ticks', 'rib:lab:ticks', 'rib:lab:ticks']);
    await frames.close();
    await until('the key goes idle', () => mesh.ribs.services.liveKeys!.isLive('rib:lab:ticks'), (live) => !live, 5000);

    // Idle, the refreshes go on six times further apart: two of them (the first may still be a
    // watched one's straggler), then the gap between them, timed from the heartbeat's own refreshes.
    const idleFrom = lab.composed.length;
    await until('two idle refreshes', () => lab.composed.length - idleFrom, (n) => n >= 2, 20_000);
    const idleGap = lab.composed[idleFrom + 1]! - lab.composed[idleFrom]!;
    console.log(`region heartbeat: 3 frames in ${watchedFor} ms while watched (1 s cadence); idle refreshes ${idleGap} ms apart (6 s cadence)`);
    expect(watchedFor).toBeLessThan(6000);
    expect(idleGap).toBeGreaterThanOrEqual(5500);
    expect(idleGap).toBeLessThan(9000);
  });
});
