import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { supergraphPath } from '@keelson/gateway';
import { freePort } from '@keelson/service';
import { bearer, gqlData, registerCredentials, subscribe, type Subscription } from './support/client';
import { createProject, sendTurn, startHarnessMesh, waitIdle, type HarnessMesh } from './support/harness';
import { projectWithWorkflow, startWorkflow, waitForRun } from './support/runs';
import { quietTemporalRuntime } from './support/temporalServer';
import { until } from './support/until';

quietTemporalRuntime();

const root = join(__dirname, '..');

interface Event {
  cursor: string;
  type?: string;
  runId?: string;
  __typename?: string;
}
const RUN_EVENTS = 'subscription ($after: String) { runEvents(after: $after) { cursor type runId } }';
const HARNESS_EVENTS = 'subscription ($after: String) { harnessEvents(after: $after) { __typename cursor sessionId } }';
const QUICK = 'name: quick\nnodes:\n  - { id: one, type: bash, bash: "echo one" }\n  - { id: two, type: bash, depends_on: [one], bash: "echo two" }\n';

/** The production gateway entry (`apps/gateway/main.ts`) as its own process. */
async function startGatewayProcess(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; output: () => string; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ['-r', './scripts/register.js', 'apps/gateway/main.ts'], { cwd: root, env: { ...env, KEELSON_LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const health = `http://127.0.0.1:${env.KEELSON_GATEWAY_PORT}/health`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the gateway process exited:\n${output}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the gateway process was not healthy within 60 s:\n${output}`);
    }
    const ok = await fetch(health).then((r) => r.ok, () => false);
    if (ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Takes events until `done` holds for the list so far; fails on an error frame. */
async function collect<K extends string>(sub: Subscription<Record<K, Event>>, field: K, into: Event[], done: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    const r = await sub.next(Math.max(1, deadline - Date.now()));
    if (r.errors?.length || !r.data) throw new Error(`${field}: ${JSON.stringify(r.errors)}`);
    into.push(r.data[field]);
  }
}

/** Takes what is left before the socket's close; returns the close's message. */
async function drainUntilClosed<K extends string>(sub: Subscription<Record<K, Event>>, field: K, into: Event[]): Promise<string> {
  for (;;) {
    const r = await sub.next(10_000);
    if (r.errors?.length || !r.data) return r.errors?.[0]?.message ?? 'no error';
    into.push(r.data[field]);
  }
}

describe('the gateway process restarted and its supergraph reloaded under live subscriptions', () => {
  let h: HarnessMesh;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let gateway: Awaited<ReturnType<typeof startGatewayProcess>> | undefined;
  let url: string;
  let wsUrl: string;
  let supergraphFile: string;

  beforeAll(async () => {
    h = await startHarnessMesh();
    dir = await mkdtemp(join(tmpdir(), 'keelson-gw-'));
    supergraphFile = join(dir, 'supergraph.graphql');
    await writeFile(supergraphFile, await readFile(supergraphPath(), 'utf8'));
    const port = await freePort();
    const urls = Object.fromEntries(Object.entries(h.mesh.subgraphUrls).map(([name, u]) => [`KEELSON_${name.toUpperCase()}_URL`, u]));
    env = { ...h.mesh.rawEnv, ...urls, KEELSON_HOST: '127.0.0.1', KEELSON_GATEWAY_PORT: String(port), KEELSON_SUPERGRAPH_FILE: supergraphFile };
    url = `http://127.0.0.1:${port}/graphql`;
    wsUrl = `ws://127.0.0.1:${port}/graphql`;
    if (h.mesh.adminToken) registerCredentials(url, bearer(h.mesh.adminToken.token));
    gateway = await startGatewayProcess(env);
  }, 150_000);

  afterAll(async () => {
    await gateway?.stop();
    await h?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('resumes runEvents and harnessEvents from the last cursor after a restart with every event exactly once; a reload keeps them open', async () => {
    const project = await projectWithWorkflow(url, 'gw-restart', { 'quick.yaml': QUICK });
    const harnessProject = await createProject(h.mesh, 'gw-restart-pi');
    const { startSession } = await gqlData<{ startSession: { id: string } }>(url, 'mutation ($p: ID!) { startSession(harnessId: "pi", input: { projectId: $p }) { id } }', { p: harnessProject.id });
    const sessionId = startSession.id;
    const runEvents: Event[] = [];
    const harnessEvents: Event[] = [];
    const runFinished = (id: string) => () => runEvents.some((e) => e.runId === id && e.type === 'RUN_SUCCEEDED');
    const turnsDone = (n: number) => () => harnessEvents.filter((e) => e.__typename === 'TurnComplete').length >= n;

    // Live through the gateway process.
    let runSub = subscribe<{ runEvents: Event }>(wsUrl, RUN_EVENTS, {});
    let harnessSub = subscribe<{ harnessEvents: Event }>(wsUrl, HARNESS_EVENTS, {});
    const run1 = await startWorkflow(url, 'quick', { projectId: project.id });
    await sendTurn(h.mesh, sessionId, 'first turn');
    await collect(runSub, 'runEvents', runEvents, runFinished(run1.id));
    await collect(harnessSub, 'harnessEvents', harnessEvents, turnsDone(1));
    await waitIdle(h.mesh, sessionId);

    // The supergraph reloaded twice (SIGHUP, then the file rewritten with a changed description):
    // the open subscriptions keep delivering, and queries see the new graph.
    const reloads = () => gateway!.output().match(/supergraph reloaded; open subscriptions kept/g)?.length ?? 0;
    gateway!.child.kill('SIGHUP');
    await until('the SIGHUP reload', async () => reloads(), (n) => n >= 1, 20_000);
    const sdl = await readFile(supergraphFile, 'utf8');
    const changed = sdl.replace(/type Query\b/, '"""The mesh\'s queries (reloaded)."""\ntype Query');
    expect(changed).not.toBe(sdl);
    await writeFile(supergraphFile, changed);
    const deadline = Date.now() + 20_000;
    for (;;) {
      const { __schema } = await gqlData<{ __schema: { queryType: { description: string | null } } }>(url, '{ __schema { queryType { description } } }');
      if (__schema.queryType.description === "The mesh's queries (reloaded).") break;
      if (Date.now() > deadline) throw new Error(`the file change was not reloaded:\n${gateway!.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // The log line is written after the swap, so it may reach us a moment after the new graph does.
    await until('the file reload logged', async () => reloads(), (n) => n >= 2, 20_000);
    expect(reloads()).toBe(2);
    const run2 = await startWorkflow(url, 'quick', { projectId: project.id });
    await sendTurn(h.mesh, sessionId, 'second turn');
    await collect(runSub, 'runEvents', runEvents, runFinished(run2.id));
    await collect(harnessSub, 'harnessEvents', harnessEvents, turnsDone(2));
    await waitIdle(h.mesh, sessionId);

    // The gateway process stops under both subscriptions; events keep happening while it is away.
    await gateway!.stop();
    // What was on the wire before the close is seen; then the close itself.
    expect(await drainUntilClosed(runSub, 'runEvents', runEvents)).toMatch(/^close /);
    expect(await drainUntilClosed(harnessSub, 'harnessEvents', harnessEvents)).toMatch(/^close /);
    await runSub.close();
    await harnessSub.close();
    const run3 = await startWorkflow(h.mesh.gatewayUrl, 'quick', { projectId: project.id });
    await sendTurn(h.mesh, sessionId, 'third turn');
    await waitForRun(h.mesh.gatewayUrl, run3.id, (r) => r.status === 'SUCCEEDED');
    await waitIdle(h.mesh, sessionId);

    // Restarted on the same port, the client resumes from the last cursor it saw.
    gateway = await startGatewayProcess(env);
    runSub = subscribe<{ runEvents: Event }>(wsUrl, RUN_EVENTS, { after: runEvents.at(-1)!.cursor });
    harnessSub = subscribe<{ harnessEvents: Event }>(wsUrl, HARNESS_EVENTS, { after: harnessEvents.at(-1)!.cursor });
    const run4 = await startWorkflow(url, 'quick', { projectId: project.id });
    await sendTurn(h.mesh, sessionId, 'fourth turn');
    await collect(runSub, 'runEvents', runEvents, runFinished(run4.id));
    await collect(harnessSub, 'harnessEvents', harnessEvents, turnsDone(4));
    await runSub.close();
    await harnessSub.close();

    // Every event of both streams, read from the start through the mesh's own gateway, is what the
    // client saw: nothing missed, nothing twice.
    const allRuns: Event[] = [];
    const allHarness: Event[] = [];
    const fullRuns = subscribe<{ runEvents: Event }>(h.mesh.gatewayWsUrl, RUN_EVENTS, {});
    const fullHarness = subscribe<{ harnessEvents: Event }>(h.mesh.gatewayWsUrl, HARNESS_EVENTS, {});
    await collect(fullRuns, 'runEvents', allRuns, () => allRuns.at(-1)?.cursor === runEvents.at(-1)!.cursor);
    await collect(fullHarness, 'harnessEvents', allHarness, () => allHarness.at(-1)?.cursor === harnessEvents.at(-1)!.cursor);
    await fullRuns.close();
    await fullHarness.close();
    expect(new Set(runEvents.map((e) => e.cursor)).size).toBe(runEvents.length);
    expect(new Set(harnessEvents.map((e) => e.cursor)).size).toBe(harnessEvents.length);
    expect(runEvents.map((e) => e.cursor)).toEqual(allRuns.map((e) => e.cursor));
    expect(harnessEvents.map((e) => e.cursor)).toEqual(allHarness.map((e) => e.cursor));
    expect(runEvents.filter((e) => e.runId === run3.id).length).toBeGreaterThan(0);
    console.log(`gateway restart: ${runEvents.length} run events and ${harnessEvents.length} harness events, each seen once`);
  }, 180_000);
});
