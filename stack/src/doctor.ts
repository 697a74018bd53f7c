import 'reflect-metadata';
import { execFile } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { createDriverRegistry, harnessSettings } from '@keelson/harness';
import { findOrphanGroups, findOwnedProcesses, probeBwrap, runGit, SANDBOX_FIX } from '@keelson/platform';
import { isLoopback, keelsonHome, keelsonWorkspace, parseEnv, type MeshEnv } from '@keelson/schema';
import { ClickClackClient, ManagedBus, resolveBusSetup } from '@keelson/swarms';
import { loadDotEnv, tracingFromEnv } from '@keelson/service';
import { findTemporalCli, TEMPORAL_CLI_VERSION } from '@keelson/temporal';
import { Client } from 'pg';
import { readLastStart } from './ownership';

const run = promisify(execFile);

type Status = 'ok' | 'warn' | 'fail';
interface Check {
  name: string;
  status: Status;
  detail: string;
}

async function check(name: string, fn: () => Promise<Omit<Check, 'name'>>): Promise<Check> {
  try {
    return { name, ...(await fn()) };
  } catch (err) {
    return { name, status: 'fail', detail: (err as Error).message };
  }
}

function portFree(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

/**
 * The swarms' bus: which ClickClack (managed, external, or unavailable and why). Swarms are optional:
 * without a bus the rest of the mesh runs, so this is at worst a warning.
 */
export async function swarmBusCheck(env: NodeJS.ProcessEnv, home: string): Promise<Omit<Check, 'name'>> {
  const setup = resolveBusSetup(env, home);
  if (setup.mode === 'UNAVAILABLE') return { status: 'warn', detail: `swarms unavailable: ${setup.reason} (the rest of the mesh is unaffected)` };
  if (setup.mode === 'EXTERNAL') {
    const ready = await new ClickClackClient({ url: setup.url }).ready();
    return ready
      ? { status: 'ok', detail: `external ClickClack at ${setup.url}${setup.token ? '' : '; no CLICKCLACK_TOKEN: the owner must be minted by a loopback magic link'}` }
      : { status: 'warn', detail: `external ClickClack at ${setup.url} does not answer /readyz: swarms will not start` };
  }
  const bus = new ManagedBus({ binary: setup.binary, dir: setup.dataRoot, port: setup.port, env });
  const version = (await bus.version()) ?? 'version unknown';
  const status = await bus.status();
  if (status.running) return { status: 'ok', detail: `managed ClickClack ${version} (${setup.binary}) running at ${setup.url}, pid ${status.pid}` };
  if (await bus.client().answers()) return { status: 'warn', detail: `port ${setup.port} is taken by a server this mesh does not own; set CLICKCLACK_PORT (or CLICKCLACK_URL to use it)` };
  return { status: 'ok', detail: `managed ClickClack ${version} (${setup.binary}) on 127.0.0.1:${setup.port}, started by the first swarm; data in ${bus.dataDir}` };
}

/**
 * The processes this home owns: what the latest start adopted or ended (a dev server or groups a
 * crash left behind), the dev server running on the home's state file, and orphaned groups the next
 * start will end. Ownership is read from command lines, never from a pid alone.
 */
export async function processesCheck(home: string): Promise<Omit<Check, 'name'>> {
  const notes: string[] = [];
  const last = await readLastStart(home);
  if (last) {
    const what = last.processes.map((p) => `${p.outcome} ${p.what} pid ${p.pid}`);
    notes.push(`last start ${last.at} (pid ${last.pid}): ${what.length ? what.join('; ') : 'adopted or ended nothing'}`);
  } else {
    notes.push('no start recorded yet');
  }
  const dbFilename = join(home, 'temporal', 'dev.db');
  const [server] = await findOwnedProcesses([['server', 'start-dev'], ['--db-filename', dbFilename]]);
  notes.push(server ? `Temporal dev server pid ${server.pid} running on ${dbFilename} (a start adopts it)` : 'no Temporal dev server of this home running');
  const orphans = await findOrphanGroups(home);
  if (orphans.length === 0) return { status: 'ok', detail: notes.join('; ') };
  notes.push(`${orphans.length} orphaned group(s) a crash left (${orphans.map((o) => `${o.kind} pgid ${o.pgid}`).join(', ')}): the next start ends them`);
  return { status: 'warn', detail: notes.join('; ') };
}

/**
 * Tracing: off unless OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT names a receiver; on, whether that
 * receiver takes an (empty) OTLP/HTTP export.
 */
export async function tracingCheck(env: NodeJS.ProcessEnv): Promise<Omit<Check, 'name'>> {
  const settings = tracingFromEnv(env);
  if (!settings.enabled) return { status: 'ok', detail: `off: ${settings.reason} (README "Traces and metrics")` };
  try {
    const res = await fetch(settings.tracesUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"resourceSpans":[]}', signal: AbortSignal.timeout(5000) });
    return res.ok
      ? { status: 'ok', detail: `on: OTLP/HTTP to ${settings.tracesUrl} (it accepts exports)` }
      : { status: 'warn', detail: `on, but ${settings.tracesUrl} answered ${res.status} to an empty export: spans may be dropped` };
  } catch (err) {
    return { status: 'warn', detail: `on, but ${settings.tracesUrl} is unreachable (${(err as Error).message}): spans are dropped until it answers` };
  }
}

type Outcome = Omit<Check, 'name'>;

/** Node: version 20 or later. */
async function nodeCheck(): Promise<Outcome> {
  const major = Number(process.versions.node.split('.')[0]);
  return major >= 20
    ? { status: 'ok', detail: `v${process.versions.node}` }
    : { status: 'fail', detail: `v${process.versions.node}; Node 20 or later is required` };
}

/** Git: its version, and the user.name and user.email createProject commits with. */
async function gitCheck(env: NodeJS.ProcessEnv): Promise<Outcome> {
  const git = (args: string[]) => runGit(args, { cwd: homedir(), env, timeoutMs: 10_000 });
  const { stdout } = await git(['--version']);
  const get = (k: string) => git(['config', '--global', '--get', k]).then((r) => r.stdout.trim(), () => '');
  const missing = (await Promise.all(['user.name', 'user.email'].map(async (k) => ((await get(k)) ? '' : k)))).filter(Boolean);
  return missing.length
    ? { status: 'warn', detail: `${stdout.trim()}; createProject needs ${missing.join(' and ')} (git config --global ${missing[0]} …)` }
    : { status: 'ok', detail: stdout.trim() };
}

/** Postgres: reachable, its version, and whether the database exists yet. */
async function postgresCheck(e: MeshEnv): Promise<Outcome> {
  const url = new URL(e.DATABASE_URL);
  const client = new Client({ connectionString: e.DATABASE_URL, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    const { rows } = await client.query<{ v: string }>("SELECT current_setting('server_version') AS v");
    return { status: 'ok', detail: `${url.host}${url.pathname}, server ${rows[0]!.v}` };
  } catch (err) {
    if ((err as { code?: string }).code === '3D000') {
      return { status: 'warn', detail: `${url.host} reachable; database ${url.pathname.slice(1)} missing (npm start creates it)` };
    }
    throw new Error(`${url.host} unreachable: ${(err as Error).message}`);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Memory search: hybrid with pgvector and an embeddings endpoint, lexical otherwise (and why). */
async function memoryCheck(e: MeshEnv): Promise<Outcome> {
  // pg_available_extensions is server-wide: ask the maintenance database, which always exists.
  const url = new URL(e.DATABASE_URL);
  url.pathname = '/postgres';
  const client = new Client({ connectionString: url.toString(), connectionTimeoutMillis: 5000 });
  let pgvector: string | undefined;
  try {
    await client.connect();
    const { rows } = await client.query<{ v: string }>("SELECT default_version AS v FROM pg_available_extensions WHERE name = 'vector'");
    pgvector = rows[0]?.v;
  } finally {
    await client.end().catch(() => undefined);
  }
  const endpoint = e.KEELSON_EMBEDDINGS_URL && e.KEELSON_EMBEDDINGS_MODEL ? `${e.KEELSON_EMBEDDINGS_MODEL} at ${e.KEELSON_EMBEDDINGS_URL}` : undefined;
  if (pgvector && endpoint) return { status: 'ok', detail: `hybrid: pgvector ${pgvector}, embeddings ${endpoint}` };
  const missing = [
    pgvector ? '' : 'pgvector is not installed (scripts/install-pgvector.sh)',
    endpoint ? '' : 'no embeddings endpoint (KEELSON_EMBEDDINGS_URL and KEELSON_EMBEDDINGS_MODEL)',
  ].filter(Boolean);
  return { status: 'ok', detail: `lexical (full text + trigram): ${missing.join('; ')}` };
}

/** Temporal: TEMPORAL_ADDRESS answering for its namespace, or a dev server CLI (built, or buildable with Go). */
async function temporalCheck(e: MeshEnv, home: string): Promise<Outcome> {
  if (e.TEMPORAL_ADDRESS) {
    const connection = await Connection.connect({ address: e.TEMPORAL_ADDRESS, connectTimeout: 5000 });
    try {
      await connection.workflowService.describeNamespace({ namespace: e.TEMPORAL_NAMESPACE });
      return { status: 'ok', detail: `${e.TEMPORAL_ADDRESS}, namespace ${e.TEMPORAL_NAMESPACE}` };
    } finally {
      await connection.close();
    }
  }
  const cli = await findTemporalCli({ home });
  if (cli) return { status: 'ok', detail: `dev server from ${cli} (TEMPORAL_ADDRESS unset)` };
  const go = await run('go', ['version']).then((r) => r.stdout.trim(), () => '');
  return go
    ? { status: 'warn', detail: `CLI not built yet; npm start builds ${TEMPORAL_CLI_VERSION} once with ${go} (~4 min)` }
    : { status: 'fail', detail: `no temporal CLI and no Go toolchain: install Go, or put temporal ${TEMPORAL_CLI_VERSION} on PATH` };
}

/** Authentication: on or off (and whether off is allowed on this bind), the admin token, the assertion secret, JWTs. */
async function authCheck(e: MeshEnv, home: string): Promise<Outcome> {
  if (e.KEELSON_AUTH === 'off') {
    return isLoopback(e.KEELSON_HOST)
      ? { status: 'warn', detail: `KEELSON_AUTH=off: every process on this machine controls the mesh (${e.KEELSON_HOST})` }
      : { status: 'fail', detail: `KEELSON_AUTH=off with ${e.KEELSON_HOST}: services refuse to start; turn authentication on or bind loopback` };
  }
  const jwt = e.KEELSON_JWT_JWKS_URL ? `; JWTs from ${e.KEELSON_JWT_JWKS_URL} (iss ${e.KEELSON_JWT_ISSUER ?? 'UNSET'}, aud ${e.KEELSON_JWT_AUDIENCE ?? 'UNSET'})` : '';
  const tokenFile = join(home, 'token');
  const token = await access(tokenFile).then(() => `admin token in ${tokenFile}`, () => 'npm start writes an admin token to ' + tokenFile);
  const secret = e.KEELSON_ASSERTION_SECRET ? 'assertion secret from KEELSON_ASSERTION_SECRET' : `assertion secret in ${join(home, 'assertion.key')}`;
  if (e.KEELSON_JWT_JWKS_URL && (!e.KEELSON_JWT_ISSUER || !e.KEELSON_JWT_AUDIENCE)) {
    return { status: 'fail', detail: `KEELSON_JWT_JWKS_URL needs KEELSON_JWT_ISSUER and KEELSON_JWT_AUDIENCE${jwt}` };
  }
  return { status: 'ok', detail: `on, binding ${e.KEELSON_HOST}; ${token}; ${secret}${jwt}` };
}

/** Ports: whether each port `npm start` binds is free. */
async function portsCheck(e: MeshEnv): Promise<Outcome> {
  const ports: [string, number][] = [
    ['gateway', e.KEELSON_GATEWAY_PORT],
    ['projects', e.KEELSON_PROJECTS_PORT],
    ['ribs', e.KEELSON_RIBS_PORT],
    ['sessions', e.KEELSON_SESSIONS_PORT],
    ['swarms', e.KEELSON_SWARMS_PORT],
    ...(e.TEMPORAL_ADDRESS ? [] : ([['temporal', e.KEELSON_TEMPORAL_PORT], ['temporal-ui', e.KEELSON_TEMPORAL_UI_PORT]] as [string, number][])),
  ];
  const busy = [];
  for (const [name, port] of ports) if (!(await portFree(port, e.KEELSON_HOST))) busy.push(`${name} ${port}`);
  return busy.length
    ? { status: 'warn', detail: `in use: ${busy.join(', ')} (another mesh running? override with KEELSON_*_PORT)` }
    : { status: 'ok', detail: ports.map(([n, p]) => `${n} ${p}`).join(', ') + ' free' };
}

/** Metrics: where each process and the Temporal worker serve Prometheus. */
async function metricsCheck(e: MeshEnv): Promise<Outcome> {
  return {
    status: 'ok',
    detail: `every service serves Prometheus at GET /metrics (one scrape per process${e.KEELSON_AUTH === 'on' ? ', with a read-scoped token' : ''}); Temporal worker metrics ${
      e.KEELSON_WORKER_METRICS_PORT > 0 ? `at http://${e.KEELSON_HOST}:${e.KEELSON_WORKER_METRICS_PORT}/metrics` : 'off (KEELSON_WORKER_METRICS_PORT=0)'
    }`,
  };
}

/** Harness CLIs: which are installed (and their versions), and where their model calls go. */
async function harnessCheck(e: MeshEnv, env: NodeJS.ProcessEnv): Promise<Outcome> {
  const drivers = Object.values(createDriverRegistry(harnessSettings(e, env)));
  const reports = await Promise.all(drivers.filter((d) => d.implemented).map((d) => d.report()));
  const missing = reports.filter((r) => !r.installed).map((r) => r.harnessId);
  const found = reports.filter((r) => r.installed).map((r) => `${r.harnessId} ${r.version ?? ''}`.trim());
  const endpoint = e.KEELSON_MODEL_BASE_URL ? `model endpoint ${e.KEELSON_MODEL_BASE_URL}` : 'no KEELSON_MODEL_BASE_URL: each CLI calls its vendor';
  return missing.length
    ? { status: 'warn', detail: `missing: ${missing.join(', ')} (run npm ci); ${found.join(', ')}; ${endpoint}` }
    : { status: 'ok', detail: `${found.join(', ')}; ${endpoint}` };
}

/** The sandbox: bubblewrap usable (or KEELSON_SANDBOX=off, unconfined). */
async function sandboxCheck(e: MeshEnv): Promise<Outcome> {
  if (e.KEELSON_SANDBOX === 'off') {
    return { status: 'warn', detail: 'KEELSON_SANDBOX=off: Bash tool calls, bash/script nodes and harness CLIs run without bubblewrap (unconfined)' };
  }
  const bwrap = await probeBwrap();
  return bwrap.ok
    ? { status: 'ok', detail: `${bwrap.version} at ${bwrap.path}: Bash tool calls, bash/script nodes and harness CLIs run confined` }
    : { status: 'warn', detail: `${bwrap.error}: Bash tool calls, bash/script nodes and harness CLIs will refuse to run; ${SANDBOX_FIX}` };
}

/** Folders: the home and the workspace writable (or creatable under a writable parent). */
async function foldersCheck(home: string, workspace: string): Promise<Outcome> {
  const notes: string[] = [];
  for (const [label, dir] of [['home', home], ['workspace', workspace]] as const) {
    let probe = dir;
    while (!(await access(probe).then(() => true, () => false))) probe = dirname(probe);
    await access(probe, constants.W_OK).catch(() => {
      throw new Error(`${label} ${dir} is not writable (${probe})`);
    });
    notes.push(`${label} ${dir}${probe === dir ? '' : ' (created on first use)'}`);
  }
  return { status: 'ok', detail: notes.join(', ') };
}

/** `npm run doctor`: the state of every dependency `npm start` needs, one line each. */
export async function doctor(env: NodeJS.ProcessEnv = process.env): Promise<Check[]> {
  const e = parseEnv(env);
  const home = keelsonHome(e, homedir());
  const workspace = keelsonWorkspace(e, homedir());
  const checks: Promise<Check>[] = [
    check('node', () => nodeCheck()),
    check('git', () => gitCheck(env)),
    check('postgres', () => postgresCheck(e)),
    check('memory', () => memoryCheck(e)),
    check('temporal', () => temporalCheck(e, home)),
    check('auth', () => authCheck(e, home)),
    check('ports', () => portsCheck(e)),
    check('tracing', () => tracingCheck(env)),
    check('metrics', () => metricsCheck(e)),
    check('harness', () => harnessCheck(e, env)),
    check('sandbox', () => sandboxCheck(e)),
    check('swarms', () => swarmBusCheck(env, home)),
    check('processes', () => processesCheck(home)),
    check('folders', () => foldersCheck(home, workspace)),
  ];
  return Promise.all(checks);
}

if (require.main === module) {
  Promise.resolve()
    .then(() => {
      loadDotEnv();
      return doctor();
    })
    .then(
      (checks) => {
        const mark: Record<Status, string> = { ok: 'ok  ', warn: 'warn', fail: 'FAIL' };
        for (const c of checks) process.stdout.write(`${mark[c.status]}  ${c.name.padEnd(9)} ${c.detail}\n`);
        const failed = checks.filter((c) => c.status === 'fail').length;
        process.stdout.write(failed ? `\n${failed} check(s) failed: npm start will not come up until they pass.\n` : '\nReady for npm start.\n');
        process.exit(failed ? 1 : 0);
      },
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
}
