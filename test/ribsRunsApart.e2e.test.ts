import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseEnv } from '@keelson/schema';
import { meshSecurityFromEnv, silentLogger } from '@keelson/service';
import type { Rib, RibRunEvent } from '@keelson/ribs-contract';
import { loadRibsServiceConfig, loadRunsServiceConfig, startRibsService, startRunsService } from '@keelson/stack';
import { projectsSettings, startProjectsSubgraph as startProjects, type RunningProjects } from '@keelson/subgraph-projects';
import type { RunningRibs } from '@keelson/subgraph-ribs';
import type { RunningRuns } from '@keelson/subgraph-runs';
import { startModelServer, type ModelServer } from '@keelson/model-server';
import { memorySettings, startMemorySubgraph as startMemory, type RunningMemory } from '@keelson/subgraph-memory';
import { createTestDatabase, type TestDatabase } from './support/db';
import { gqlData, registerCredentials } from './support/client';
import { assertionCredentials } from './support/auth';
import { quietTemporalRuntime, testTemporalAddress } from './support/temporalServer';
import { getRun, startWorkflow, waitForRun, type RunView } from './support/runs';
import { until } from './support/until';
import { startWorkerProcess, type WorkerProcess } from './support/workerProcess';

quietTemporalRuntime();

/** The lab rib contributes `lab-hello`, starts it and runs an inline definition from its actions, and records its run events. */
const events: RibRunEvent[] = [];
let activations = 0;
const labRib: Rib = {
  id: 'lab',
  displayName: 'Lab',
  contributeWorkflows: () => {
    activations += 1;
    return [
      {
        definition: {
          name: 'lab-hello',
          description: 'Greets whoever it is given.',
          inputs: { who: { default: 'world' } },
          nodes: [{ id: 'say', type: 'bash', bash: 'echo "hello $KEELSON_INPUT_WHO"' }],
        },
      },
    ];
  },
  onRunEvent: (event) => {
    events.push(event);
  },
  async onAction(action, ctx) {
    if (action.type === 'start') {
      const { runId } = await ctx.startWorkflow!('lab-hello', { who: 'the ribs process' });
      return { ok: true, data: { runId } };
    }
    if (action.type === 'agent-turn') {
      // The seed 000 seams, in the ribs process: a turn through its provider registry, what it lists, and memory.
      const turn = ctx.runAgentTurn!({ prompt: 'BOARD_TURN the lab asks for a one-line summary' });
      const result = await turn.result;
      const providers = ctx.getProviders!().map((p) => p.id);
      const memory = ctx.getMemory!();
      const { id } = await memory.writeback({ text: `lab decided: ${result.text}`, kind: 'decision' });
      const recalled = await memory.recall({ query: 'lab decided' });
      return { ok: true, data: { status: result.status, text: result.text, providerId: result.providerId ?? null, providers, memoryId: id, recalled } };
    }
    if (action.type === 'run-inline') {
      const result = await ctx.runWorkflow!({ name: 'lab-inline', nodes: [{ id: 'add', type: 'bash', bash: 'echo $((2 + 3))' }] });
      return { ok: true, data: result };
    }
    return { ok: false, error: `unknown action '${action.type}'` };
  },
};

/** Who started a run and from which catalog scope (fields the shared run view leaves out). */
async function provenance(url: string, id: string): Promise<{ scope: string; startedByRibId: string | null }> {
  return (await gqlData<{ run: { scope: string; startedByRibId: string | null } }>(url, 'query ($id: ID!) { run(id: $id) { scope startedByRibId } }', { id })).run;
}
const outputs = (run: RunView) => run.nodes.map((n) => ({ id: n.id, status: n.status, output: n.output }));

describe('the ribs and runs services booted apart, as docker-compose runs them', () => {
  let db: TestDatabase;
  let dir: string;
  let projects: RunningProjects | undefined;
  let ribs: RunningRibs | undefined;
  let runs: RunningRuns | undefined;
  let worker: WorkerProcess | undefined;
  let model: ModelServer | undefined;
  let memory: RunningMemory | undefined;

  beforeAll(async () => {
    model = await startModelServer({ rules: [{ name: 'board', match: { regex: '^BOARD_TURN' }, reply: { text: 'the board is green' } }] });
    db = await createTestDatabase();
    dir = await mkdtemp(join(tmpdir(), 'keelson-apart-'));
    const gitconfig = join(dir, 'gitconfig');
    await writeFile(gitconfig, '[user]\n\tname = Keelson Test\n\temail = test@keelson.invalid\n[init]\n\tdefaultBranch = main\n');
    const base: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: db.url,
      KEELSON_HOME: join(dir, 'home'),
      KEELSON_WORKSPACE: join(dir, 'workspace'),
      KEELSON_HOST: '127.0.0.1',
      GIT_CONFIG_GLOBAL: gitconfig,
      GIT_CONFIG_NOSYSTEM: '1',
      TEMPORAL_ADDRESS: testTemporalAddress(),
      TEMPORAL_TASK_QUEUE: `test-apart-${randomUUID()}`,
      KEELSON_RIB_WORKFLOW_GRANTS: 'lab:lab-hello',
      KEELSON_MEMORY_COMPACTION_INTERVAL_MS: '0',
      KEELSON_MODEL_BASE_URL: model.url,
      KEELSON_MODEL_API_KEY: 'keelson-test',
    };
    // Every process reads the same KEELSON_HOME, so all share its assertion key (as with KEELSON_ASSERTION_SECRET in compose).
    const security = meshSecurityFromEnv(parseEnv(base));
    projects = await startProjects({
      databaseUrl: db.url,
      host: '127.0.0.1',
      port: 0,
      security,
      settings: projectsSettings(parseEnv(base), homedir(), base),
      log: silentLogger(),
    });
    // The memory subgraph as its own service: the ribs process reaches it by URL (getMemory).
    memory = await startMemory({ databaseUrl: db.url, host: '127.0.0.1', port: 0, security, settings: memorySettings(parseEnv(base)), log: silentLogger() });
    const env: NodeJS.ProcessEnv = { ...base, KEELSON_PROJECTS_URL: projects.url, KEELSON_MEMORY_URL: memory.url };
    const ribHost = { available: { lab: labRib } };
    // Both open the runs domain's tables on a fresh database at once: the migration lock serializes them.
    const [ribsBoot, runsBoot] = await Promise.allSettled([
      startRibsService({ ...loadRibsServiceConfig(env), port: 0, log: silentLogger(), ribHost, ribRuns: { refresh: false } }),
      startRunsService({ ...loadRunsServiceConfig(env), port: 0, log: silentLogger(), ribHost }),
    ]);
    if (ribsBoot.status === 'fulfilled') ribs = ribsBoot.value;
    if (runsBoot.status === 'fulfilled') runs = runsBoot.value;
    if (ribsBoot.status === 'rejected') throw ribsBoot.reason;
    if (runsBoot.status === 'rejected') throw runsBoot.reason;
    for (const url of [projects.url, ribs!.url, runs!.url]) registerCredentials(url, assertionCredentials(security.assertions));
    // The production worker entry, its own process.
    worker = await startWorkerProcess(env);
  });

  afterAll(async () => {
    await worker?.stop();
    await runs?.stop();
    await ribs?.stop();
    await memory?.stop();
    await projects?.stop();
    await model?.stop();
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("lists a rib's workflow in the runs service's catalog, activating that process's rib host on the first read, and starts it there", async () => {
    const before = activations;
    const { workflows } = await gqlData<{ workflows: { name: string; ribId: string | null; scope: string }[] }>(runs!.url, '{ workflows { name ribId scope } }');
    expect(workflows).toContainEqual({ name: 'lab-hello', ribId: 'lab', scope: 'RIB' });
    expect(activations).toBe(before + 1);

    const started = await startWorkflow(runs!.url, 'lab-hello', { inputs: { who: 'the runs service' } });
    const run = await waitForRun(runs!.url, started.id, (r) => r.status !== 'RUNNING');
    expect(run).toMatchObject({ workflowName: 'lab-hello', status: 'SUCCEEDED' });
    expect(outputs(run)).toEqual([{ id: 'say', status: 'SUCCEEDED', output: 'hello the runs service\n' }]);
    expect(await provenance(runs!.url, run.id)).toEqual({ scope: 'RIB', startedByRibId: null });

    // The contributing rib hears of it in the ribs process, once: the runs process's host consumes no run events.
    const heard = await until('the lab rib hears the run succeed', () => events.filter((e) => e.runId === run.id), (e) => e.some((x) => x.status === 'succeeded'));
    expect(heard.map((e) => e.status)).toEqual(['running', 'succeeded']);
    // Every catalog read since (the start resolved the workflow too) used the host activated on the first.
    expect(activations).toBe(before + 1);
  });

  it("starts a rib's workflow through the ribs service's run seams (a board action calling startWorkflow) and follows it to completion", async () => {
    const { ribAction } = await gqlData<{ ribAction: { ok: boolean; data: { runId: string } | null; error: string | null } }>(
      ribs!.url,
      'mutation { ribAction(ribId: "lab", type: "start") { ok data error } }',
    );
    expect(ribAction).toMatchObject({ ok: true, error: null });
    const runId = ribAction.data!.runId;

    const status = await until('the seam reports success', () => ribs!.host.context('lab')!.getRunStatus!(runId), (s) => s?.status === 'succeeded' || s?.status === 'failed');
    expect(status).toMatchObject({ workflowName: 'lab-hello', status: 'succeeded' });
    // The same run, seen by a client of the runs service.
    const run = await getRun(runs!.url, runId);
    expect(run.status).toBe('SUCCEEDED');
    expect(outputs(run)).toEqual([{ id: 'say', status: 'SUCCEEDED', output: 'hello the ribs process\n' }]);
    expect(await provenance(runs!.url, runId)).toEqual({ scope: 'RIB', startedByRibId: 'lab' });
  });

  it('runs an in-memory definition through runWorkflow from the ribs service and returns its outcome', async () => {
    const { ribAction } = await gqlData<{ ribAction: { ok: boolean; data: unknown } }>(ribs!.url, 'mutation { ribAction(ribId: "lab", type: "run-inline") { ok data } }');
    expect(ribAction).toEqual({ ok: true, data: { status: 'succeeded', nodes: { add: { state: 'succeeded', output: '5\n' } } } });
  });

  it('runs an agent turn from a board action in the ribs process against the local model server, lists its providers and writes and recalls memory through the memory subgraph', async () => {
    const before = model!.requests().length;
    const { ribAction } = await gqlData<{ ribAction: { ok: boolean; error: string | null; data: { status: string; text: string; providerId: string | null; providers: string[]; memoryId: string; recalled: { id: string; kind: string; text: string }[] } } }>(
      ribs!.url,
      'mutation { ribAction(ribId: "lab", type: "agent-turn") { ok data error } }',
    );
    expect(ribAction).toMatchObject({ ok: true, error: null });
    expect(ribAction.data).toMatchObject({ status: 'ok', text: 'the board is green' });
    expect(ribAction.data.providers).toContain(ribAction.data.providerId);
    // The model server heard the turn, from this process's provider registry.
    const heard = model!.requests().slice(before).filter((r) => (r.userText ?? '').startsWith('BOARD_TURN'));
    expect(heard.length).toBeGreaterThan(0);
    expect(ribAction.data.recalled).toContainEqual(expect.objectContaining({ id: ribAction.data.memoryId, kind: 'decision', text: 'lab decided: the board is green' }));
  });
});
