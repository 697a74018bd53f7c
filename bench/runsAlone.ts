// `node -r ./scripts/register.js bench/runsAlone.ts`: the runs subgraph alone, sent the `_entities`
// fetches our gateway sends it for bench:peers' federated and deep varied workloads (same seed: 30
// projects, 6 runs of 3 nodes each). No gateway, no projects subgraph, no Temporal (no read path
// reaches the executor). See bench/README.md "The runs subgraph alone".
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startSubgraph } from '@keelson/kit';
import { bundledWorkflowsDir, openRunsDomain, type RunsExecutor } from '@keelson/runs';
import { ASSERTION_HEADER, scopes } from '@keelson/schema';
import { serviceIdentity, silentLogger, testSecurity } from '@keelson/service';
import { buildRunsSchema } from '@keelson/subgraph-runs';
import { benchRounds, runBench, stderrProgress, type Teardown } from './benchStack';
import { createTestDatabase } from '../test/support/db';
import { startLoadClient } from './loadClient';

/** bench:peers' seed, and how long each workload is measured (20 connections, closed loop). */
const seed = { projects: 30, runsPerProject: 6, nodesPerRun: 3 };
const timing = { ...benchRounds({ rounds: 3, cellMs: 3_000 }), connections: 20 };

// The runs subgraph's fetch in our gateway's query plan for bench/peers.ts' FEDERATED and DEEP (the same
// selection as `@apollo/query-planner` plans over the checked-in supergraph), in its wire form.
const WORKLOADS = {
  federated: 'query Federated__runs__1($representations:[_Any!]!$f:Int$a:String){_entities(representations:$representations){...on Project{runs(first:$f after:$a){edges{node{id status workflowName}}}}}}',
  deep: 'query Deep__runs__1($representations:[_Any!]!$f:Int$a:String){_entities(representations:$representations){...on Project{runs(first:$f after:$a){edges{node{id status nodes{id status}project{__typename id}}}}}}}',
};

const progress = stderrProgress('bench:runs');
const noExecutor = new Proxy({}, { get: () => () => Promise.reject(new Error('bench/runsAlone.ts has no executor: it only reads')) }) as RunsExecutor;

async function main(teardown: Teardown): Promise<string> {
  const db = await createTestDatabase('keelson_bench');
  teardown.push(`drop database ${db.name}`, () => db.drop());
  const dir = await mkdtemp(join(tmpdir(), 'keelson-bench-runs-'));
  teardown.push(`remove ${dir}`, () => rm(dir, { recursive: true, force: true }));
  const security = testSecurity();
  const domain = await openRunsDomain({
    databaseUrl: db.url,
    settings: { keelsonHome: join(dir, 'home'), bundledWorkflowsDir, temporal: { address: 'unused', namespace: 'default', taskQueue: 'unused' }, projectsUrl: 'http://127.0.0.1:1/graphql', heartbeatTimeoutMs: 30_000 },
    executor: noExecutor,
    identity: serviceIdentity(security.assertions, 'runs'),
    log: silentLogger(),
  });
  teardown.push('close the runs domain', () => domain.close());
  const served = await startSubgraph({ name: 'runs', schema: (await buildRunsSchema()).schema, host: '127.0.0.1', port: 0, security, log: silentLogger(), context: (base) => ({ ...base, services: domain.services }) });
  teardown.push('stop the runs subgraph', () => served.stop());

  const projectIds = Array.from({ length: seed.projects }, () => randomUUID());
  await domain.services.dataSource.query(
    `WITH r AS (
       INSERT INTO runs (id, workflow_name, title, definition, scope, project_id, project_name, status, cwd, artifacts_dir, temporal_workflow_id)
       SELECT gen_random_uuid(), 'bench', 'bench run ' || g, '{}'::jsonb, 'GLOBAL', p.id::uuid, 'bench', 'SUCCEEDED', '/tmp', '/tmp', 'bench-' || p.id || '-' || g
       FROM unnest($1::text[]) AS p(id) CROSS JOIN generate_series(1, $2::int) AS g
       RETURNING id)
     INSERT INTO run_nodes (run_id, node_id, position, type, status)
     SELECT r.id, 'n' || n, n, 'bash', 'SUCCEEDED' FROM r CROSS JOIN generate_series(1, $3::int) AS n`,
    [projectIds, seed.runsPerProject, seed.nodesPerRun],
  );
  const representations = projectIds.map((id) => ({ __typename: 'Project', id }));
  // As bench:peers' varied bodies: $f 1–6, $a one of 2,000 cursors past every run.
  const bodies = (query: string) => Array.from({ length: 2_000 }, (_, i) => JSON.stringify({ query, variables: { representations, f: 1 + (i % seed.runsPerProject), a: String(1_000_000 + i) } }));
  const headers = { [ASSERTION_HEADER]: await security.assertions.sign({ subject: 'service:bench', kind: 'service', scopes: [...scopes] }) };
  const load = startLoadClient();
  teardown.push('stop the load worker', () => load.close());

  const lines: string[] = [];
  for (const [name, query] of Object.entries(WORKLOADS)) {
    const list = bodies(query);
    const before = domain.queryCount();
    const res = await fetch(served.url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: list[5] });
    const text = await res.text();
    if (res.status !== 200 || text.includes('"errors"')) throw new Error(`${name}: ${res.status} ${text.slice(0, 400)}`);
    const sql = domain.queryCount() - before;
    progress(`${name}: warm-up`);
    await load.mixed(served.url, list, timing.connections, 1_500, headers);
    const rounds: string[] = [];
    let completed = 0;
    let elapsedMs = 0;
    let busyMs = 0;
    for (let round = 0; round < timing.rounds; round++) {
      const elu = performance.eventLoopUtilization();
      const r = await load.mixed(served.url, list, timing.connections, timing.cellMs, headers);
      const used = performance.eventLoopUtilization(elu);
      completed += r.completed;
      elapsedMs += r.elapsedMs;
      busyMs += used.active;
      rounds.push(((r.completed / r.elapsedMs) * 1000).toFixed(0));
    }
    lines.push(`  ${name.padEnd(9)} @${timing.connections}: ${((completed / elapsedMs) * 1000).toFixed(0).padStart(5)} req/s (rounds ${rounds.join(', ')}), event loop busy ${(busyMs / completed).toFixed(2)} ms per request, ${sql} SQL statement(s) per request`);
  }
  return [
    '',
    `Keelson Mesh bench: the runs subgraph alone — ${seed.projects} project references per request, ${seed.runsPerProject} runs each of ${seed.nodesPerRun} nodes; ${timing.rounds} rounds of ${timing.cellMs} ms`,
    ...lines,
    '',
  ].join('\n');
}

runBench(main, progress);
