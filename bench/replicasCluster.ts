import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { haproxyCommand, startCluster } from '@keelson/stack';
import { adminUrl, createTestDatabase } from '../test/support/db';
import { UNCACHED_GATEWAY, type Progress, type Teardown } from './benchStack';

/** What bench:replicas measures through: the front URL, and a switch between one and two replicas. */
export interface ReplicaSetup {
  url: string;
  headers: Record<string, string>;
  configure(replicas: 1 | 2): Promise<void>;
  /** Requests each replica of the gateways and of runs served over the run. */
  routed(): Promise<{ front: number[]; runs: number[] }>;
  describe: string[];
  /** The end of each replica's log, for a failure's message. */
  logs?: () => string;
}

/** `stot` (sessions served) per server of `backend`, by replica. */
async function served(socket: string, backend: string): Promise<number[]> {
  const csv = await haproxyCommand(socket, 'show stat');
  const [header, ...rows] = csv.replace(/^# /, '').trim().split('\n');
  const cols = header!.split(',');
  return rows
    .map((r) => r.split(','))
    .filter((r) => r[cols.indexOf('pxname')] === backend && r[cols.indexOf('svname')]!.startsWith(`${backend}-`))
    .map((r) => Number(r[cols.indexOf('stot')]));
}

/**
 * The production shape (`startCluster`: Temporal on Postgres, HAProxy, every service its own
 * process) on a throwaway database, `projects` created through HAProxy; one replica = the second
 * gateway and the second runs replica put in maintenance on HAProxy's runtime API.
 */
export async function clusterReplicaSetup(teardown: Teardown, progress: Progress, projects: number): Promise<ReplicaSetup> {
  const db = await createTestDatabase('keelson_bench');
  const temporalDatabase = `${db.name}_temporal`;
  teardown.push(`drop databases ${db.name}*`, async () => {
    await db.drop();
    const admin = new Client({ connectionString: adminUrl });
    await admin.connect();
    for (const name of [temporalDatabase, `${temporalDatabase}_visibility`]) await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.end();
  });
  const dir = await mkdtemp(join(tmpdir(), 'keelson-bench-cluster-'));
  teardown.push(`remove ${dir}`, () => rm(dir, { recursive: true, force: true }));
  const gitconfig = join(dir, 'gitconfig');
  await writeFile(gitconfig, '[user]\n\tname = Keelson Bench\n\temail = bench@keelson.invalid\n[init]\n\tdefaultBranch = main\n');
  const env = { ...process.env, ...UNCACHED_GATEWAY, KEELSON_HOME: join(dir, 'home'), KEELSON_WORKSPACE: join(dir, 'workspace'), GIT_CONFIG_GLOBAL: gitconfig, GIT_CONFIG_NOSYSTEM: '1', TEMPORAL_ADDRESS: undefined, KEELSON_LOG_LEVEL: 'warn' };
  const binDir = join(process.env.KEELSON_HOME ?? join(process.env.HOME ?? '/root', '.keelson'), 'bin');
  const cluster = await startCluster({ env, databaseUrl: db.url, temporalDatabase, binDir, dir: join(dir, 'cluster'), progress: (line) => progress(`cluster: ${line}`) });
  teardown.push('stop the cluster', () => cluster.stop());
  const headers = { authorization: `Bearer ${(await readFile(join(dir, 'home', 'token'), 'utf8')).trim()}` };
  progress(`seeding ${projects} projects through HAProxy (git init + commit each)`);
  for (let i = 0; i < projects; i++) {
    const res = await fetch(cluster.gatewayUrl, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ query: `mutation { createProject(input: { name: "bench-${i}" }) { id } }` }) });
    if (!res.ok || (await res.text()).includes('"errors"')) throw new Error(`seeding project ${i} failed: ${res.status}`);
  }
  const socket = cluster.loadBalancer.socket;
  return {
    url: cluster.gatewayUrl,
    headers,
    async configure(replicas) {
      for (const pool of ['runs', 'gateway']) await haproxyCommand(socket, `set server ${pool}/${pool}-2 state ${replicas === 2 ? 'ready' : 'maint'}`);
      await new Promise((r) => setTimeout(r, 500));
    },
    routed: async () => ({ front: await served(socket, 'gateway'), runs: await served(socket, 'runs') }),
    describe: [
      'the production shape (npm run start:cluster): Temporal on Postgres, every service its own process, HAProxy in front of the',
      'gateways and of the runs replicas; one = the second gateway and runs replica in maintenance (HAProxy runtime API), two = both;',
      `${projects} projects without runs (federated still asks runs for each project's page, one batch)`,
    ],
  };
}
