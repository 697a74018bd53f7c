import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gqlData } from './support/client';
import { startTestMesh, type TestMesh } from './support/mesh';
import { projectWithWorkflow, startWorkflow, waitForRun } from './support/runs';
import { quietTemporalRuntime } from './support/temporalServer';
import { crashOnceWorkflow, pidsMarked } from './support/workflowFixtures';
import { startWorkerProcess, type WorkerProcess } from './support/workerProcess';

quietTemporalRuntime();

/**
 * \`act\` acts at its very end, after a pause in which the test freezes its worker (SIGSTOP): the
 * command ends while no one listens, and the worker is killed before it could report.
 */
const ACT_THEN_CRASH = `
name: act-then-crash
nodes:
  - id: act
    type: bash
    bash: |
      echo "act attempt $KEELSON_ATTEMPT" >> "$ARTIFACTS_DIR/starts.log"
      (exec -a "keelson-act-$KEELSON_RUN_ID" sleep 2)
      echo "act" >> "$ARTIFACTS_DIR/effects.log"
      echo "acted once"
  - id: after
    type: bash
    depends_on: [act]
    bash: echo "after" >> "$ARTIFACTS_DIR/effects.log"
`;

/** Whether a process marked `marker` still runs. */
const live = (marker: string) => pidsMarked(marker).length > 0;

const lines = async (file: string) => (await readFile(file, 'utf8').catch(() => '')).split('\n').filter(Boolean);

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('a worker killed (SIGKILL) in the middle of a node', () => {
  let mesh: TestMesh;
  let workerEnv: NodeJS.ProcessEnv;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    mesh = await startTestMesh({ KEELSON_RUN_HEARTBEAT_TIMEOUT_MS: '2000' }, { worker: false });
    workerEnv = { ...mesh.rawEnv, TEMPORAL_ADDRESS: mesh.temporal.address, KEELSON_PROJECTS_URL: mesh.projects.url };
  });

  afterAll(async () => {
    for (const w of workers) await w.stop().catch(() => undefined);
    await mesh?.teardown();
  });

  it('completes the run after a restart, each node\'s side effect happening once', async () => {
    workers.push(await startWorkerProcess(workerEnv));
    const project = await projectWithWorkflow(mesh.gatewayUrl, 'crashy', { 'crash-once.yaml': crashOnceWorkflow(30) });
    const started = await startWorkflow(mesh.gatewayUrl, 'crash-once', { projectId: project.id });
    const dir = started.artifactsDir;

    const orphan = `keelson-slow-${started.id}`;
    await until('slow to start', async () => (live(orphan) ? true : undefined));
    expect(await lines(join(dir, 'effects.log'))).toEqual(['first']);
    const killedAt = Date.now();
    await workers[0]!.kill();

    // The killed attempt's process group dies with its worker (the watchdog), before it acts.
    await until('the orphaned attempt to die', async () => (live(orphan) ? undefined : true), 5000);
    const orphanGoneAfter = Date.now() - killedAt;

    workers.push(await startWorkerProcess(workerEnv));
    const restartedAfter = Date.now() - killedAt;
    const done = await waitForRun(mesh.gatewayUrl, started.id, (r) => r.status === 'SUCCEEDED' || r.status === 'FAILED', 60_000);
    const completedAfter = Date.now() - killedAt;
    expect(done.status).toBe('SUCCEEDED');

    expect(await lines(join(dir, 'effects.log'))).toEqual(['first', 'slow', 'last']);
    expect(await lines(join(dir, 'starts.log'))).toEqual(['slow attempt 1', 'slow attempt 2']);
    expect(done.nodes.map((n) => [n.id, n.status, n.attempt])).toEqual([
      ['first', 'SUCCEEDED', 1],
      ['slow', 'SUCCEEDED', 2],
      ['last', 'SUCCEEDED', 1],
    ]);

    const { run } = await gqlData<{ run: { events: { edges: { node: { type: string; nodeId: string | null; attempt: number | null } }[] } } }>(
      mesh.gatewayUrl,
      'query ($id: ID!) { run(id: $id) { events(first: 100) { edges { node { type nodeId attempt } } } } }',
      { id: started.id },
    );
    const seen = run.events.edges.map(({ node }) => [node.type, node.nodeId, node.attempt].filter((x) => x !== null).join(':'));
    expect(seen).toEqual([
      'RUN_STARTED',
      'NODE_STARTED:first:1',
      'NODE_SUCCEEDED:first',
      'NODE_STARTED:slow:1',
      'NODE_STARTED:slow:2',
      'NODE_SUCCEEDED:slow',
      'NODE_STARTED:last:1',
      'NODE_SUCCEEDED:last',
      'RUN_SUCCEEDED',
    ]);
    console.log(
      `worker SIGKILL → orphaned attempt gone after ${orphanGoneAfter} ms; new worker polling after ${restartedAfter} ms; run SUCCEEDED after ${completedAfter} ms (heartbeat timeout 2000 ms)`,
    );
    // Two worker processes boot here (each compiles and bundles the workflows): slow on a loaded machine.
  }, 180_000);

  it('reports a command that ended while its worker was down, rather than running it again', async () => {
    // One worker only: the one frozen must be the one running the node.
    for (const w of workers.splice(0)) await w.stop();
    const worker = await startWorkerProcess(workerEnv);
    workers.push(worker);
    const project = await projectWithWorkflow(mesh.gatewayUrl, 'act-crash', { 'act-then-crash.yaml': ACT_THEN_CRASH });
    const started = await startWorkflow(mesh.gatewayUrl, 'act-then-crash', { projectId: project.id });
    const dir = started.artifactsDir;
    const acting = `keelson-act-${started.id}`;
    await until('act to start', async () => (live(acting) ? true : undefined));
    // Frozen, the worker cannot hear the command end; its watchdog sees it alive and lets the command finish.
    process.kill(worker.pid, 'SIGSTOP');
    try {
      await until('act to act', async () => ((await lines(join(dir, 'effects.log'))).includes('act') ? true : undefined), 15_000);
      await until('act to end', async () => (live(acting) ? undefined : true), 5000);
      // The supervisor writes the exit status the moment the command ends: give it that moment.
      await new Promise((r) => setTimeout(r, 300));
    } finally {
      await worker.kill();
    }
    const killedAt = Date.now();
    workers.push(await startWorkerProcess(workerEnv));
    const done = await waitForRun(mesh.gatewayUrl, started.id, (r) => r.status === 'SUCCEEDED' || r.status === 'FAILED', 60_000);
    expect(done.status).toBe('SUCCEEDED');
    // Acted once, started once, and reported by a later attempt from the record of the one that ran
    // it (usually 1 and 2; under load the 2 s heartbeat timeout can give up on an attempt before it spawns).
    expect(await lines(join(dir, 'effects.log'))).toEqual(['act', 'after']);
    const starts = await lines(join(dir, 'starts.log'));
    expect(starts).toHaveLength(1);
    const ranAs = Number(/^act attempt (\d+)$/.exec(starts[0]!)?.[1]);
    expect(done.nodes.map((n) => [n.id, n.status, n.output, n.exitCode])).toEqual([
      ['act', 'SUCCEEDED', 'acted once\n', 0],
      ['after', 'SUCCEEDED', '', 0],
    ]);
    expect(done.nodes[0]!.attempt).toBeGreaterThan(ranAs);
    console.log(`worker frozen past its command's end, then SIGKILL → run SUCCEEDED ${Date.now() - killedAt} ms later, the command not run again`);
  }, 180_000);
});
