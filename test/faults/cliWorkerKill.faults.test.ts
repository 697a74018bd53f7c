import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startModelServer, type ModelServer } from '@keelson/model-server';
import { findOrphanGroups, listProcesses } from '@keelson/platform';
import { gqlData } from '../support/client';
import { createProject, waitTask } from '../support/harness';
import { startTestMesh, type TestMesh } from '../support/mesh';
import { quietTemporalRuntime } from '../support/temporalServer';
import { startWorkerProcess, type WorkerProcess } from '../support/workerProcess';
import { Ledger, reconciles } from './ledger';

quietTemporalRuntime();
jest.setTimeout(420_000);

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const STEPS = 15;
const t0 = Date.now();
const step = (what: string) => console.log(`[faults] cli kill +${Date.now() - t0} ms: ${what}`);

/**
 * A real coding CLI (pi) runs a task turn whose tool call works in the project's worktree for several
 * seconds — each step appends `<attempt tag> <ms>` to attempts.log and reads the repository with git —
 * when its worker is SIGKILLed. The CLI's group must die with the worker (its watchdog), the retry
 * on a new worker must not start while the first attempt could still act (the task's lease:
 * TURN_IN_FLIGHT until it lapses), and the worktree must be left sound: `git fsck` clean, no
 * `.git/index.lock`.
 */
describe('the worker killed while a coding CLI runs a task turn', () => {
  let model: ModelServer;
  let mesh: TestMesh;
  let workerEnv: NodeJS.ProcessEnv;
  let worker: WorkerProcess | undefined;

  beforeAll(async () => {
    model = await startModelServer({});
    mesh = await startTestMesh(
      { KEELSON_MODEL_BASE_URL: model.url, KEELSON_MODEL_API_KEY: 'keelson-test', KEELSON_RUN_HEARTBEAT_TIMEOUT_MS: '6000' },
      { worker: false },
    );
    workerEnv = { ...mesh.rawEnv, TEMPORAL_ADDRESS: mesh.temporal.address, KEELSON_PROJECTS_URL: mesh.projects.url };
  });

  afterAll(async () => {
    await worker?.stop().catch(() => undefined);
    await mesh?.teardown();
    await model?.stop();
  });

  it('no orphan, no overlapping retry, the worktree sound', async () => {
    const ledger = new Ledger('worker killed while a coding CLI runs');
    const home = join(mesh.dir, 'home');
    worker = await startWorkerProcess(workerEnv, 180_000);
    step('worker polling');
    const project = await createProject(mesh, 'cli-kill');
    const marker = `keelson-fault-${randomUUID().slice(0, 8)}`;
    // Each attempt's shell names itself with a random tag ($$ is no name: the sandbox's pid namespace repeats it).
    const command = `a=$RANDOM$RANDOM; for i in $(seq 1 ${STEPS}); do echo "$a $(date +%s%3N)" >> attempts.log; git status --porcelain >/dev/null; sleep 0.2; done; echo ${marker}`;
    const { runTask } = await gqlData<{ runTask: { id: string } }>(
      mesh.gatewayUrl,
      'mutation ($h: ID!, $t: String!, $p: ID) { runTask(harnessId: $h, prompt: $t, projectId: $p) { id } }',
      { h: 'pi', t: `CALL_TOOL bash ${JSON.stringify({ command })}`, p: project.id },
    );
    ledger.ack(runTask.id);
    step(`task ${runTask.id} started`);
    const log = join(project.rootPath, 'attempts.log');
    const lines = async () =>
      (await readFile(log, 'utf8').catch(() => ''))
        .split('\n')
        .filter(Boolean)
        .map((l) => ({ pid: l.split(' ')[0]!, at: Number(l.split(' ')[1]) }));
    const started = Date.now() + 120_000;
    while ((await lines()).length < 3) {
      if (Date.now() > started) throw new Error(`the CLI's tool call did not start: ${worker.output().slice(-2000)}`);
      await sleep(100);
    }
    /** Processes of the tool call (its command line carries the marker), as the OS lists them. */
    const toolProcesses = async () => (await listProcesses()).filter((p) => p.argv.some((a) => a.includes(marker)));
    expect((await toolProcesses()).length).toBeGreaterThan(0);

    step('tool call acting; killing the worker');
    const fault = ledger.fault();
    const killedAt = Date.now();
    await worker.kill();
    // The CLI's watchdog polls its owner each second: give it two.
    await sleep(2_500);
    const leftAfterKill = [...(await findOrphanGroups(home)).map((o) => `group ${o.pgid}`), ...(await toolProcesses()).map((p) => `pid ${p.pid}`)];
    const lockAfterKill = existsSync(join(project.rootPath, '.git', 'index.lock'));
    const firstAttempt = await lines();

    worker = await startWorkerProcess(workerEnv, 180_000);
    step('second worker polling');
    const task = await waitTask(mesh, runTask.id, 240_000);
    step(`task ${task.status}`);
    const recovered = fault.recovered();

    const all = await lines();
    const first = all.filter((l) => l.pid === firstAttempt[0]!.pid);
    const later = all.filter((l) => l.pid !== firstAttempt[0]!.pid);
    const tags = new Set(all.map((l) => l.pid)).size;
    // Overlap: a line of the first attempt written after the retry's first line, or after its worker died (+1.5 s watchdog).
    const overlapping = first.filter((l) => l.at >= Math.min(...later.map((x) => x.at)) || l.at > killedAt + 1_500);
    const fsck = await run('git', ['fsck', '--full', '--strict'], { cwd: project.rootPath, env: mesh.rawEnv }).then(
      (r) => ({ ok: true, out: `${r.stdout}${r.stderr}` }),
      (e: { stdout?: string; stderr?: string }) => ({ ok: false, out: `${e.stdout ?? ''}${e.stderr ?? ''}` }),
    );
    const lockAtEnd = existsSync(join(project.rootPath, '.git', 'index.lock'));
    const [{ attempts }] = (await mesh.sessions.runtime.dataSource.query('SELECT attempts FROM harness_tasks WHERE id = $1', [runTask.id])) as { attempts: number }[];
    const leftAtEnd = [...(await findOrphanGroups(home)).map((o) => `group ${o.pgid}`), ...(await toolProcesses()).map((p) => `pid ${p.pid}`)];

    const row = ledger.write(task.status === 'SUCCEEDED' ? [runTask.id] : [], {
      failedByFaults: task.status === 'SUCCEEDED' ? 0 : 1,
      orphans: leftAfterKill.length + leftAtEnd.length + (lockAfterKill ? 1 : 0) + (lockAtEnd ? 1 : 0),
      note:
        `pi task: ${first.length} steps by the killed attempt, ${later.length} by the retry (${tags} attempts acted, lease taken ${attempts} times); ` +
        `${overlapping.length} overlapping steps; task done ${recovered} ms after the kill; ` +
        `git fsck ${fsck.ok ? 'clean' : 'FAILED'}; index.lock after kill ${lockAfterKill ? 'LEFT' : 'none'}, at end ${lockAtEnd ? 'LEFT' : 'none'}; left after kill: ${leftAfterKill.join(', ') || 'nothing'}`,
    });
    expect(task).toMatchObject({ status: 'SUCCEEDED' });
    expect(leftAfterKill).toEqual([]);
    expect(leftAtEnd).toEqual([]);
    expect(overlapping).toEqual([]);
    expect(later.length).toBeGreaterThanOrEqual(STEPS);
    expect(attempts).toBeGreaterThanOrEqual(2);
    expect(fsck).toMatchObject({ ok: true });
    expect(fsck.out).not.toMatch(/error|missing|dangling|broken/i);
    expect(lockAfterKill).toBe(false);
    expect(lockAtEnd).toBe(false);
    expect(reconciles(row)).toBe(true);
  });
});
