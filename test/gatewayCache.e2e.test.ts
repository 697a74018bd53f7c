import { readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { gatewayExecutionFromEnv, startGateway, supergraphPath, type GatewayOptions, type RunningGateway } from '@keelson/gateway';
import { parseEnv } from '@keelson/schema';
import { appendEvent, EventLog, EventNotifier } from '@keelson/platform';
import { RunStore } from '@keelson/runs';
import { metricsRegistry, silentLogger } from '@keelson/service';
import { bearer, gqlData, type Credentials } from './support/client';
import { createProject } from './support/harness';
import { startTestMesh, type TestMesh } from './support/mesh';
import { definitionOf, registerRun } from './support/registerRun';
import { quietTemporalRuntime } from './support/temporalServer';
import { until } from './support/until';

quietTemporalRuntime();

/**
 * The differential test of the gateway's entity cache: random concurrent writes — through the
 * gateway (`setProjectTrust`, each project flipped by one writer) and straight from the run store as
 * a workflow's activities write (`startAttempt`, each node's attempt counting up) — and reads through
 * a gateway with the cache and one without. Every value every read returns must have been current at
 * some instant in [request start − δ, request end], δ the p99 of the NOTIFY hop measured meanwhile;
 * a writer's read right after its own mutation must return exactly what it wrote. Midway the cache's
 * LISTEN connection is killed, later the cached gateway restarts.
 */

const PROJECTS = 6;
const RUNS_PER_PROJECT = 2;
const NODES = ['a', 'b', 'c'];
const READERS = 6;
/** Operations (reads and writes) the test runs: the LISTEN connection is killed a third in, the gateway restarted two thirds in. */
const OPERATIONS = 2_400;
/**
 * The most it runs for: a machine too slow to reach OPERATIONS by then fails the test rather than
 * stretch it. A quiet two-core box takes about 30 s; a CI run on a loaded one reached 1,638 in 40.
 */
const MAX_MS = 100_000;
const READ =
  'query Read($f: Int) { projects { id name trusted runs(first: $f) { edges { node { id status nodes { id attempt } } } } } }';
/** The same without `trusted`: its project list is not one a trust change drops. */
const READ_NAMES = 'query ReadNames($f: Int) { projects { id name runs(first: $f) { edges { node { id status nodes { id attempt } } } } } }';
/** Trust alone: one fetch, its whole response kept between trust changes (run events do not touch it). */
const READ_TRUST = 'query ReadTrust { projects { id name trusted } }';
/** What each read shape selects: the variables (by prefix) it can be checked against. */
const SHAPES = { full: { query: READ, covers: ['trust:', 'attempt:'] }, names: { query: READ_NAMES, covers: ['attempt:'] }, trust: { query: READ_TRUST, covers: ['trust:'] } } as const;

interface ReadAnswer {
  projects: { id: string; name: string; trusted?: boolean; runs?: { edges: { node: { id: string; status: string; nodes: { id: string; attempt: number }[] } }[] } }[];
}

/** One version of a variable: its value, from the start of the write that made it (the earliest it could commit). */
interface Version {
  value: string;
  from: number;
  /** When the write that made it answered (the latest it could have committed). */
  done: number;
}

interface Read {
  gateway: 'cached' | 'direct';
  /** What it selected. */
  shape: keyof typeof SHAPES;
  start: number;
  end: number;
  values: Map<string, string>;
}

/** The history of every variable (project trust, node attempt): versions in write order. */
class History {
  readonly versions = new Map<string, Version[]>();

  initial(variable: string, value: string): void {
    this.versions.set(variable, [{ value, from: -Infinity, done: -Infinity }]);
  }

  record(variable: string, value: string, from: number, done: number): void {
    this.versions.get(variable)!.push({ value, from, done });
  }

  /**
   * Whether `value` of `variable` was current at some instant in [start − δ, end]: version k is
   * current from its write's start until the next write answered.
   */
  admits(variable: string, value: string, start: number, end: number, delta: number): boolean {
    const versions = this.versions.get(variable);
    if (!versions) return false;
    for (let k = 0; k < versions.length; k++) {
      if (versions[k]!.value !== value) continue;
      const from = versions[k]!.from;
      const until = versions[k + 1]?.done ?? Infinity;
      if (from <= end && until >= start - delta) return true;
    }
    return false;
  }
}

function valuesOf(answer: ReadAnswer): Map<string, string> {
  const values = new Map<string, string>();
  for (const p of answer.projects) {
    if (p.trusted !== undefined) values.set(`trust:${p.id}`, String(p.trusted));
    for (const { node: run } of p.runs?.edges ?? []) for (const n of run.nodes) values.set(`attempt:${run.id}:${n.id}`, String(n.attempt));
  }
  return values;
}

async function counter(name: string, labels: Record<string, string>): Promise<number> {
  const metric = metricsRegistry().getSingleMetric(name);
  if (!metric) return 0;
  const { values } = await metric.get();
  return values.filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l)).reduce((sum, v) => sum + v.value, 0);
}

const percentile = (xs: number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
};

describe('the gateway entity cache against the event log', () => {
  let mesh: TestMesh;
  let cached: RunningGateway | undefined;
  let store: RunStore;
  let admin: Credentials;
  let reader: Credentials;
  const projects: { id: string; name: string }[] = [];
  const runIds: string[] = [];

  /** A gateway of its own over the mesh's subgraphs, executing as `options` say. */
  const startOwn = async (options: Pick<GatewayOptions, 'cache' | 'coalesce' | 'shaping'>) =>
    startGateway({
      supergraphSdl: await readFile(supergraphPath(), 'utf8'),
      host: '127.0.0.1',
      port: 0,
      security: mesh.security,
      credentials: mesh.identity.identity.authenticator,
      subgraphUrls: mesh.subgraphUrls,
      log: silentLogger(),
      ...options,
    });
  const startCached = () => startOwn({ cache: { databaseUrl: mesh.env.DATABASE_URL } });

  beforeAll(async () => {
    mesh = await startTestMesh();
    store = new RunStore(mesh.runs.services.dataSource, new EventLog(mesh.runs.services.dataSource, new EventNotifier({ url: mesh.db.url, log: silentLogger() })));
    admin = bearer(mesh.adminToken!.token);
    const made = await gqlData<{ createApiToken: { token: string } }>(mesh.gatewayUrl, 'mutation { createApiToken(name: "cache-reader", scopes: ["read"]) { token } }');
    reader = bearer(made.createApiToken.token);
    const definition = definitionOf({ name: 'cached', nodes: NODES.map((id) => ({ id, type: 'bash', bash: 'true' })) });
    for (let i = 0; i < PROJECTS; i++) {
      const project = await createProject(mesh, `cache-${i}`);
      projects.push({ id: project.id, name: `cache-${i}` });
      for (let r = 0; r < RUNS_PER_PROJECT; r++) {
        const run = await registerRun(store, definition, { cwd: mesh.dir, projectId: project.id, projectName: `cache-${i}` });
        runIds.push(run.id);
      }
    }
    cached = await startCached();
    await until('the cache listening', () => cached!.cache!.listening, Boolean);
  });

  afterAll(async () => {
    await cached?.stop();
    await mesh?.teardown();
  });

  it('answers only values current within the NOTIFY hop, exactly current after the caller\'s own mutation, across a lost LISTEN and a restart', async () => {
    const history = new History();
    const initial = await gqlData<ReadAnswer>(mesh.gatewayUrl, READ, { f: 10 });
    for (const [variable, value] of valuesOf(initial)) history.initial(variable, value);
    expect(history.versions.size).toBe(PROJECTS * (1 + RUNS_PER_PROJECT * NODES.length));

    const before = {
      hits: await counter('keelson_gateway_cache_hits_total', {}),
      responseHits: await counter('keelson_gateway_cache_responses_total', { outcome: 'hit' }),
      event: await counter('keelson_gateway_cache_invalidations_total', { cause: 'event' }),
      mutation: await counter('keelson_gateway_cache_invalidations_total', { cause: 'mutation' }),
      listener: await counter('keelson_gateway_cache_invalidations_total', { cause: 'listener' }),
    };
    const reads: Read[] = [];
    const ownReadFailures: string[] = [];
    const hops: number[] = [];
    let gateWrites = 0;
    let workflowWrites = 0;
    const started = performance.now();
    let stopping = false;
    // While the cached gateway restarts nobody sends it anything.
    let gate: Promise<void> | undefined;
    let inFlight = 0;
    const onCached = async <T>(f: (url: string) => Promise<T>): Promise<T> => {
      while (gate) await gate;
      inFlight += 1;
      try {
        return await f(cached!.url);
      } finally {
        inFlight -= 1;
      }
    };
    const done = () => stopping || performance.now() - started > MAX_MS;
    const operations = () => reads.length + gateWrites + workflowWrites;
    const at = (fraction: number) => until(`${Math.round(fraction * 100)}% of the operations`, operations, (n) => n >= fraction * OPERATIONS, MAX_MS);

    const read = async (gateway: Read['gateway'], credentials: Credentials) => {
      const variables = { f: Math.random() < 0.5 ? 10 : 20 };
      const shape = (['full', 'names', 'trust'] as const)[Math.floor(Math.random() * 3)]!;
      const send = async (url: string) => {
        const start = performance.now();
        const answer = await gqlData<ReadAnswer>(url, SHAPES[shape].query, shape === 'trust' ? {} : variables, { auth: credentials });
        reads.push({ gateway, shape, start, end: performance.now(), values: valuesOf(answer) });
      };
      if (gateway === 'cached') await onCached(send);
      else await send(mesh.gatewayUrl);
    };

    const readerLoop = async (i: number) => {
      while (!done()) await read(i % 3 === 2 ? 'direct' : 'cached', i % 2 === 0 ? admin : reader);
    };

    // Gateway writers: writer w flips its own projects' trust, then reads them back through the cache.
    const gatewayWriter = async (w: number) => {
      const own = projects.filter((_, i) => i % 2 === w);
      while (!done()) {
        const project = own[Math.floor(Math.random() * own.length)]!;
        const variable = `trust:${project.id}`;
        const versions = history.versions.get(variable)!;
        const next = versions[versions.length - 1]!.value === 'true' ? false : true;
        await onCached(async (url) => {
          const from = performance.now();
          await gqlData(url, 'mutation ($id: ID!, $t: Boolean!) { setProjectTrust(projectId: $id, trusted: $t) { id trusted } }', { id: project.id, t: next }, { auth: admin });
          history.record(variable, String(next), from, performance.now());
          gateWrites += 1;
          const start = performance.now();
          const answer = await gqlData<ReadAnswer>(url, READ, { f: 10 }, { auth: admin });
          const values = valuesOf(answer);
          reads.push({ gateway: 'cached', shape: 'full', start, end: performance.now(), values });
          if (values.get(variable) !== String(next)) ownReadFailures.push(`${variable}: wrote ${next}, read back ${values.get(variable)}`);
        });
        await new Promise((r) => setTimeout(r, 5 + Math.random() * 20));
      }
    };

    // Workflow writers: straight through the run store, each node's attempt counting up (NODE_STARTED each).
    const workflowWriter = async (w: number) => {
      const own = runIds.filter((_, i) => i % 2 === w);
      while (!done()) {
        const runId = own[Math.floor(Math.random() * own.length)]!;
        const node = NODES[Math.floor(Math.random() * NODES.length)]!;
        const variable = `attempt:${runId}:${node}`;
        const versions = history.versions.get(variable)!;
        const next = Number(versions[versions.length - 1]!.value) + 1;
        const from = performance.now();
        await store.startAttempt(runId, node, 1, next);
        history.record(variable, String(next), from, performance.now());
        workflowWrites += 1;
        await new Promise((r) => setTimeout(r, Math.random() * 10));
      }
    };

    // The NOTIFY hop, measured while all this runs: from sending an event to the cache knowing of it.
    const prober = async () => {
      while (!done()) {
        while (gate) await gate;
        const cache = cached!.cache!;
        const from = performance.now();
        const event = await appendEvent(mesh.runs.services.dataSource.manager, { stream: 'cache-probe', key: 'probe', type: 'PROBE', payload: {} });
        if (cache.listening) {
          await cache.whenSeen('cache-probe', event.seq);
          if (cache === cached!.cache && cache.listening) hops.push(performance.now() - from);
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    };

    // A third of the way in the LISTEN connection is killed; two thirds in the cached gateway restarts.
    const disruptions = async () => {
      await at(1 / 3);
      const pid = cached!.cache!.backendPid!;
      const listenerBefore = await counter('keelson_gateway_cache_invalidations_total', { cause: 'listener' });
      await mesh.runs.services.dataSource.query('SELECT pg_terminate_backend($1)', [pid]);
      await until('LISTEN back on another connection', () => cached!.cache!.listening && cached!.cache!.backendPid !== pid, Boolean);
      // Lost and back: everything dropped twice.
      expect(await counter('keelson_gateway_cache_invalidations_total', { cause: 'listener' })).toBeGreaterThan(listenerBefore);
      await at(2 / 3);
      let open!: () => void;
      gate = new Promise<void>((resolve) => (open = resolve)).then(() => undefined);
      try {
        await until('requests to the cached gateway drained', () => inFlight, (n) => n === 0);
        await cached!.stop();
        cached = await startCached();
        expect(cached.cache!.size).toBe(0);
        await until('the restarted cache listening', () => cached!.cache!.listening, Boolean);
      } finally {
        gate = undefined;
        open();
      }
      await at(1);
      stopping = true;
    };

    await Promise.all([
      // Whatever happens to it, the loops stop (a failed step fails the test, it does not hang it).
      disruptions().finally(() => {
        stopping = true;
        gate = undefined;
      }),
      prober(),
      ...Array.from({ length: READERS }, (_, i) => readerLoop(i)),
      gatewayWriter(0),
      gatewayWriter(1),
      workflowWriter(0),
      workflowWriter(1),
    ]);

    const delta = percentile(hops, 99);
    const violations: string[] = [];
    for (const r of reads) {
      for (const variable of history.versions.keys()) {
        if (!SHAPES[r.shape].covers.some((prefix) => variable.startsWith(prefix))) continue;
        const value = r.values.get(variable);
        if (value === undefined) violations.push(`${r.gateway} read at ${r.start.toFixed(1)}: ${variable} missing`);
        else if (!history.admits(variable, value, r.start, r.end, delta)) {
          violations.push(`${r.gateway} read [${r.start.toFixed(1)}, ${r.end.toFixed(1)}] ms: ${variable} = ${value}, not current within δ ${delta.toFixed(2)} ms (${JSON.stringify(history.versions.get(variable)!.slice(-4))})`);
        }
      }
    }
    const hits = (await counter('keelson_gateway_cache_hits_total', {})) - before.hits;
    const responseHits = (await counter('keelson_gateway_cache_responses_total', { outcome: 'hit' })) - before.responseHits;
    const cachedReads = reads.filter((r) => r.gateway === 'cached').length;
    process.stdout.write(
      `gateway cache differential: ${reads.length} reads (${cachedReads} cached, ${reads.length - cachedReads} direct), ${gateWrites} gateway writes, ${workflowWrites} workflow writes ` +
        `in ${((performance.now() - started) / 1000).toFixed(1)} s; NOTIFY hop p50 ${percentile(hops, 50).toFixed(2)} ms, p99 (δ) ${delta.toFixed(2)} ms over ${hops.length} probes; ` +
        `${hits} subgraph fetches and ${responseHits} whole responses from the cache; ${violations.length} values not current within δ, ${ownReadFailures.length} own writes not read back\n`,
    );

    for (const line of [...violations.slice(0, 5), ...ownReadFailures.slice(0, 5)]) process.stdout.write(`  ${line}\n`);
    expect(violations.slice(0, 5)).toEqual([]);
    expect(ownReadFailures.slice(0, 5)).toEqual([]);
    expect(operations()).toBeGreaterThanOrEqual(OPERATIONS);
    expect(gateWrites).toBeGreaterThan(0);
    expect(workflowWrites).toBeGreaterThan(0);
    expect(hops.length).toBeGreaterThan(0);
    // Not vacuous: the cache answered, and events and mutations dropped entries.
    expect(hits).toBeGreaterThan(0);
    expect(responseHits).toBeGreaterThan(0);
    expect(await counter('keelson_gateway_cache_invalidations_total', { cause: 'event' })).toBeGreaterThan(before.event);
    expect(await counter('keelson_gateway_cache_invalidations_total', { cause: 'mutation' })).toBeGreaterThan(before.mutation);
    expect(await counter('keelson_gateway_cache_invalidations_total', { cause: 'listener' })).toBeGreaterThan(before.listener);
  }, 2 * MAX_MS + 30_000);

  it('keeps, across a trust change, what a read that does not select trust was made of, and drops what one that does was', async () => {
    const misses = () => counter('keelson_gateway_cache_misses_total', { subgraph: 'projects' });
    const responseHits = () => counter('keelson_gateway_cache_responses_total', { outcome: 'hit' });
    const project = projects[0]!;
    const trustOf = (answer: ReadAnswer) => answer.projects.find((p) => p.id === project.id)!.trusted;
    // Both reads kept (no writes now): the second time each is answered whole.
    await gqlData(cached!.url, READ_NAMES, { f: 3 }, { auth: admin });
    await gqlData(cached!.url, READ, { f: 3 }, { auth: admin });
    let hitsBefore = await responseHits();
    const names = await gqlData<ReadAnswer>(cached!.url, READ_NAMES, { f: 3 }, { auth: admin });
    const was = trustOf(await gqlData<ReadAnswer>(cached!.url, READ, { f: 3 }, { auth: admin }));
    expect(await responseHits()).toBe(hitsBefore + 2);
    const before = { misses: await misses(), responseHits: await responseHits() };
    const head = cached!.cache!.seen('projects');
    await gqlData(cached!.url, 'mutation ($id: ID!, $t: Boolean!) { setProjectTrust(projectId: $id, trusted: $t) { id } }', { id: project.id, t: !was }, { auth: admin });
    // Its own NOTIFY arrives too (after the mutation's own drop): neither drops what the names read was made of.
    await until('the trust change notified', () => cached!.cache!.seen('projects'), (seq) => seq > head);
    expect(await gqlData<ReadAnswer>(cached!.url, READ_NAMES, { f: 3 }, { auth: admin })).toEqual(names);
    expect(await responseHits()).toBe(before.responseHits + 1);
    expect(await misses()).toBe(before.misses);
    // The read of trust executes again, its project list fetched anew: the value just written.
    hitsBefore = await responseHits();
    expect(trustOf(await gqlData<ReadAnswer>(cached!.url, READ, { f: 3 }, { auth: admin }))).toBe(!was);
    expect(await responseHits()).toBe(hitsBefore);
    expect(await misses()).toBe(before.misses + 1);
  });

  it('never answers one caller with what another caller fetched', async () => {
    const variables = { f: 7 };
    const misses = () => counter('keelson_gateway_cache_misses_total', { subgraph: 'runs' });
    // Quiet: no writes now, so whatever the first caller filled stays.
    await gqlData(cached!.url, READ, variables, { auth: admin });
    const beforeAgain = await misses();
    await gqlData(cached!.url, READ, variables, { auth: admin });
    expect(await misses()).toBe(beforeAgain);
    await gqlData(cached!.url, READ, variables, { auth: reader });
    expect(await misses()).toBeGreaterThan(beforeAgain);
  });

  it('shows a run registered, or resumed, straight through the store within the NOTIFY hop, before any event of it', async () => {
    const project = projects[1]!;
    const responseHits = () => counter('keelson_gateway_cache_responses_total', { outcome: 'hit' });
    const runsOf = (answer: ReadAnswer) => answer.projects.find((p) => p.id === project.id)!.runs!.edges.map((e) => e.node);
    const read = async () => runsOf(await gqlData<ReadAnswer>(cached!.url, READ_NAMES, { f: 50 }, { auth: admin }));
    const kept = async () => {
      await read();
      const hits = await responseHits();
      const answer = await read();
      expect(await responseHits()).toBe(hits + 1);
      return answer;
    };
    // As a rib starting a run in the background would: its rows, and no RUN_STARTED (no executor here).
    const before = await kept();
    const run = await registerRun(store, definitionOf({ name: 'unstarted', nodes: [{ id: 'only', type: 'bash', bash: 'true' }] }), {
      cwd: mesh.dir,
      projectId: project.id,
      projectName: project.name,
    });
    expect(before.map((r) => r.id)).not.toContain(run.id);
    const shown = await until('the new run in the cached page', read, (runs) => runs.some((r) => r.id === run.id), 5_000);
    expect(shown.find((r) => r.id === run.id)!.status).toBe('RUNNING');
    // Failed (an evented change), then resumed: RUNNING again before its launch's RUN_STARTED.
    await store.failToStart(run.id, 1, 'no executor in this test');
    await until('the failure in the cached page', read, (runs) => runs.find((r) => r.id === run.id)?.status === 'FAILED', 5_000);
    expect((await kept()).find((r) => r.id === run.id)!.status).toBe('FAILED');
    await store.prepareResume(run.id);
    await until('the resumed run in the cached page', read, (runs) => runs.find((r) => r.id === run.id)?.status === 'RUNNING', 5_000);
  });

  it('lets identical queries that read nothing it keeps share one execution in flight', async () => {
    // isGitRepo is read from git at request time: the query's one fetch is not cacheable.
    const git = 'query { projects { id isGitRepo } }';
    const coalesced = () => counter('keelson_gateway_coalesced_total', {});
    const expected = await gqlData(cached!.url, git, {}, { auth: admin });
    const before = await coalesced();
    await until(
      'a burst of identical queries shared an execution',
      async () => {
        const answers = await Promise.all(Array.from({ length: 8 }, () => gqlData(cached!.url, git, {}, { auth: admin })));
        for (const answer of answers) expect(answer).toEqual(expected);
        return coalesced();
      },
      (n) => n > before,
      20_000,
    );
  });

  it('serves uncached with KEELSON_GATEWAY_CACHE=off (on by default), and never caches a field outside its policy', async () => {
    const hits = () => counter('keelson_gateway_cache_hits_total', {});
    const responseHits = () => counter('keelson_gateway_cache_responses_total', { outcome: 'hit' });
    const fromEnv = (env: Record<string, string>) => gatewayExecutionFromEnv(parseEnv({ DATABASE_URL: mesh.env.DATABASE_URL, ...env }));
    expect(fromEnv({}).cache?.databaseUrl).toBe(mesh.env.DATABASE_URL);
    const off = await startOwn(fromEnv({ KEELSON_GATEWAY_CACHE: 'off' }));
    try {
      expect(off.cache).toBeUndefined();
      const before = { hits: await hits(), responses: await responseHits() };
      for (let i = 0; i < 3; i++) await gqlData(off.url, READ, { f: 10 }, { auth: admin });
      expect({ hits: await hits(), responses: await responseHits() }).toEqual(before);
    } finally {
      await off.stop();
    }
    const before = await hits();
    // isGitRepo is read from git at request time: never from the cache.
    const git = 'query { projects { id isGitRepo } }';
    const projectsMisses = () => counter('keelson_gateway_cache_misses_total', { subgraph: 'projects' });
    const missesBefore = await projectsMisses();
    for (let i = 0; i < 3; i++) await gqlData(cached!.url, git, {}, { auth: admin });
    expect(await hits()).toBe(before);
    expect(await projectsMisses()).toBe(missesBefore);
  });
});
