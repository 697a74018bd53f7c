import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { streams } from '@keelson/schema';
import { startCluster, type RunningCluster } from '@keelson/stack';
import { bearer, gqlData, registerCredentials } from '../support/client';
import { adminUrl, createTestDatabase, type TestDatabase } from '../support/db';
import { testWorkflowBundleFile } from '../support/temporalServer';
import { pidsMarked } from '../support/workflowFixtures';

const run = promisify(execFile);

/** The cluster the suite runs against, with what it was started on. */
export interface TestCluster extends RunningCluster {
  db: TestDatabase;
  dir: string;
  token: string;
  /**
   * Drops the mesh's and Temporal's databases and the temp folder after stopping everything. With
   * `keepLogs`, each process's log is first copied to a folder of its own under the OS temp dir (its
   * path printed), so a failed scenario can be read after the run.
   */
  teardown(options?: { keepLogs?: boolean }): Promise<void>;
}

/** The binaries' folder: scripts/temporal-server/build.sh's, as .ci/run builds it. */
export function binDir(): string {
  return join(process.env.KEELSON_HOME ?? join(process.env.HOME ?? '/root', '.keelson'), 'bin');
}

/** The shape on a fresh database and temp home, its Temporal databases named after the mesh's (both dropped at teardown). */
export async function startTestCluster(extraEnv: NodeJS.ProcessEnv = {}): Promise<TestCluster> {
  const db = await createTestDatabase('keelson_cl');
  const dir = await mkdtemp(join(tmpdir(), 'keelson-cluster-'));
  const gitconfig = join(dir, 'gitconfig');
  await writeFile(gitconfig, '[user]\n\tname = Keelson Test\n\temail = test@keelson.invalid\n[init]\n\tdefaultBranch = main\n');
  const temporalDatabase = `${db.name}_temporal`;
  const dropAll = async () => {
    await db.drop();
    const admin = new Client({ connectionString: adminUrl });
    await admin.connect();
    try {
      for (const name of [temporalDatabase, `${temporalDatabase}_visibility`]) await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    } finally {
      await admin.end();
    }
  };
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    KEELSON_HOME: join(dir, 'home'),
    KEELSON_WORKSPACE: join(dir, 'workspace'),
    GIT_CONFIG_GLOBAL: gitconfig,
    GIT_CONFIG_NOSYSTEM: '1',
    TEMPORAL_ADDRESS: undefined,
    KEELSON_ENV_FILE: '',
    KEELSON_WORKFLOW_BUNDLE: testWorkflowBundleFile(),
    // A killed worker's node is retried on the other one after 2 s without a heartbeat.
    KEELSON_RUN_HEARTBEAT_TIMEOUT_MS: '2000',
    ...extraEnv,
  };
  let cluster: RunningCluster;
  try {
    cluster = await startCluster({ env, databaseUrl: db.url, temporalDatabase, binDir: binDir(), dir: join(dir, 'cluster'), progress: (line) => process.stderr.write(`[cluster] ${line}\n`) });
  } catch (err) {
    await dropAll().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  const token = (await readFile(join(dir, 'home', 'token'), 'utf8')).trim();
  const unregister = [cluster.gatewayUrl, ...cluster.replicaUrls.gateway!].map((url) => registerCredentials(url, bearer(token)));
  return {
    ...cluster,
    db,
    dir,
    token,
    async teardown(options = {}) {
      unregister.forEach((u) => u());
      await cluster.stop();
      if (options.keepLogs) await keepLogs(join(dir, 'cluster'));
      await dropAll();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Copies the `*.log` files of `from` to a new folder under the OS temp dir and says where. */
async function keepLogs(from: string): Promise<void> {
  const to = await mkdtemp(join(tmpdir(), 'keelson-cluster-logs-'));
  const logs = (await readdir(from).catch(() => [] as string[])).filter((f) => f.endsWith('.log'));
  for (const file of logs) await copyFile(join(from, file), join(to, file));
  process.stderr.write(`[cluster] a scenario failed: the ${logs.length} process logs are kept in ${to}\n`);
}

/** A project created through `url`. */
export async function createProject(url: string, name: string): Promise<string> {
  const { createProject } = await gqlData<{ createProject: { id: string } }>(url, 'mutation ($n: String!) { createProject(input: { name: $n }) { id } }', { n: name });
  return createProject.id;
}

/** The project's runs as `url` lists them: id and status, newest first. */
export async function listRuns(url: string, projectId: string): Promise<{ id: string; status: string }[]> {
  const { project } = await gqlData<{ project: { runs: { edges: { node: { id: string; status: string } }[] } } }>(
    url,
    'query ($id: ID!) { project(id: $id) { runs(first: 100) { edges { node { id status } } } } }',
    { id: projectId },
  );
  return project.runs.edges.map((e) => e.node);
}

/** The workflow ids `temporal workflow list --query` finds (the CLI, against the cluster's Postgres visibility store). */
export async function temporalList(address: string, query: string): Promise<string[]> {
  const { stdout } = await run('temporal', ['workflow', 'list', '--address', address, '--namespace', 'default', '--query', query, '--output', 'json'], { env: { ...process.env, PATH: `${binDir()}:${process.env.PATH}` } });
  const rows = stdout.trim() ? (JSON.parse(stdout) as { execution: { workflowId: string } }[]) : [];
  return rows.map((r) => r.execution.workflowId).sort();
}

/** A run's events as the log stores them (every run's without `runId`): cursor and type, in order. */
export async function storedRunEvents(databaseUrl: string, runId?: string): Promise<[string, string][]> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const { rows } = runId
      ? await db.query<{ seq: string; type: string }>('SELECT seq::text, type FROM events WHERE stream = $1 AND key = $2 ORDER BY events.seq', [streams.runs, runId])
      : await db.query<{ seq: string; type: string }>('SELECT seq::text, type FROM events WHERE stream = $1 ORDER BY events.seq', [streams.runs]);
    return rows.map((r) => [r.seq, r.type]);
  } finally {
    await db.end();
  }
}

/** Every run id the mesh's database holds for `projectId` (duplicates kept). */
export async function storedRunIds(databaseUrl: string, projectId: string): Promise<string[]> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query<{ id: string }>('SELECT id::text FROM runs WHERE project_id = $1', [projectId]);
    return rows.map((r) => r.id);
  } finally {
    await db.end();
  }
}

/** Which of `workerPids` a live process marked `marker` descends from (its parent chain), if any. */
export function workerRunning(marker: string, workerPids: number[]): number | undefined {
  for (let pid of pidsMarked(marker)) {
    while (pid > 1) {
      if (workerPids.includes(pid)) return pid;
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        pid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      } catch {
        break;
      }
    }
  }
  return undefined;
}

/**
 * The projects named `<prefix>…` and createProject's idempotency keys `key-<prefix>…`: by name, every
 * project id stored under it, and the id its key's result holds (null when the key holds none).
 */
export async function storedKeyedProjects(databaseUrl: string, prefix: string): Promise<Map<string, { ids: string[]; keyResult: string | null | undefined }>> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const like = `${prefix.replace(/[\\%_]/g, '\\$&')}%`;
    const projects = await db.query<{ name: string; id: string }>('SELECT name, id::text FROM projects WHERE name LIKE $1', [like]);
    const keys = await db.query<{ key: string; id: string | null }>("SELECT key, result->>'id' AS id FROM idempotency_keys WHERE mutation = 'createProject' AND key LIKE $1", [`key-${like}`]);
    const byName = new Map<string, { ids: string[]; keyResult: string | null | undefined }>();
    for (const p of projects.rows) {
      const entry = byName.get(p.name) ?? { ids: [], keyResult: undefined };
      entry.ids.push(p.id);
      byName.set(p.name, entry);
    }
    for (const k of keys.rows) {
      const name = k.key.slice('key-'.length);
      const entry = byName.get(name) ?? { ids: [], keyResult: undefined };
      entry.keyResult = k.id;
      byName.set(name, entry);
    }
    return byName;
  } finally {
    await db.end();
  }
}

/** Samples the Postgres server's connections (every database, as `max_connections` counts them) every 500 ms until stopped: the peak, and the limit. */
export function sampleConnections(databaseUrl: string): { stop(): Promise<{ peak: number; max: number }> } {
  const db = new Client({ connectionString: databaseUrl });
  let peak = 0;
  let max = 0;
  let running = true;
  const loop = (async () => {
    await db.connect();
    max = Number((await db.query<{ max_connections: string }>('SHOW max_connections')).rows[0]!.max_connections);
    while (running) {
      const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity');
      peak = Math.max(peak, rows[0]!.n);
      await new Promise((r) => setTimeout(r, 500));
    }
    await db.end();
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { peak, max };
    },
  };
}
