// `node -r ./scripts/register.js bench/runsAlone.ts`: the runs subgraph alone, sent the `_entities`
// fetches our gateway sends it for bench:peers' federated and deep varied workloads (same seed: 30
// projects, 6 runs of 3 nodes each), served twice over one database — queries compiled by graphql-jit
// (the default) and executed by graphql-js — measured in alternating rounds. No gateway, no projects
// subgraph, no Temporal (no read path reaches the executor). See bench/README.md "The runs subgraph alone".
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startSubgraph, type SubgraphExecution } from '@keelson/kit';
import { bundledWorkflowsDir, openRunsDomain, type RunsExecutor } from '@keelson/runs';
import { ASSERTION_HEADER, scopes } from '@keelson/schema';
import { serviceIdentity, silentLogger, testSecurity, type Served } from '@keelson/service';
import { buildRunsSchema } from '@keelson/subgraph-runs';
import { benchRounds, runBench, stderrProgress, type Teardown } from './benchStack';
import { createTestDatabase } from '../test/support/db';
import { startLoadClient } from './loadClient';

/** bench:peers' seed, and how long each workload is measured (20 connections, closed loop). */
const seed = { projects: 30, runsPerProject: 6, nodesPerRun: 3 };
const timing = { ...benchRounds({ rounds: 4, cellMs: 2_500 }), connections: 20 };
const EXECUTIONS: SubgraphExecution[] = ['compiled', 'graphql-js'];

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
  const { schema } = await buildRunsSchema();
  const served = {} as Record<SubgraphExecution, Served>;
  for (const execution of EXECUTIONS) {
    served[execution] = await startSubgraph({ name: 'runs', schema, host: '127.0.0.1', port: 0, security, log: silentLogger(), execution, context: (base) => ({ ...base, services: domain.services }) });
    teardown.push(`stop the runs subgraph (${execution})`, () => served[execution].stop());
  }

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

  const post = async (execution: SubgraphExecution, body: string) => {
    const res = await fetch(served[execution].url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    return { status: res.status, text: await res.text() };
  };
  const lines: string[] = [];
  for (const [name, query] of Object.entries(WORKLOADS)) {
    const list = bodies(query);
    // Both executors answer alike, and a request costs the same SQL through either.
    const answers: string[] = [];
    const sql: number[] = [];
    for (const execution of EXECUTIONS) {
      const before = domain.queryCount();
      const { status, text } = await post(execution, list[5]);
      if (status !== 200 || text.includes('"errors"')) throw new Error(`${name} (${execution}): ${status} ${text.slice(0, 400)}`);
      sql.push(domain.queryCount() - before);
      answers.push(text);
    }
    if (answers[0] !== answers[1]) throw new Error(`${name}: the executors answered differently:\n${answers[0].slice(0, 400)}\n${answers[1].slice(0, 400)}`);
    const totals = Object.fromEntries(EXECUTIONS.map((e) => [e, { completed: 0, elapsedMs: 0, busyMs: 0, rounds: [] as string[] }]));
    for (const execution of EXECUTIONS) {
      progress(`${name}: warm-up (${execution})`);
      await load.mixed(served[execution].url, list, timing.connections, 1_500, headers);
    }
    for (let round = 0; round < timing.rounds; round++) {
      progress(`${name}: round ${round + 1}/${timing.rounds}`);
      // The executor that goes first alternates, so drift and noise land on both alike.
      for (const execution of round % 2 === 0 ? EXECUTIONS : [...EXECUTIONS].reverse()) {
        const elu = performance.eventLoopUtilization();
        const r = await load.mixed(served[execution].url, list, timing.connections, timing.cellMs, headers);
        const used = performance.eventLoopUtilization(elu);
        const t = totals[execution];
        t.completed += r.completed;
        t.elapsedMs += r.elapsedMs;
        t.busyMs += used.active;
        t.rounds.push(((r.completed / r.elapsedMs) * 1000).toFixed(0));
      }
    }
    const rps = (e: SubgraphExecution) => (totals[e].completed / totals[e].elapsedMs) * 1000;
    const busy = (e: SubgraphExecution) => totals[e].busyMs / totals[e].completed;
    lines.push(`  ${name} @${timing.connections}, ${sql[0]} SQL statement(s) per request (graphql-js: ${sql[1]})`);
    for (const e of EXECUTIONS) {
      lines.push(`    ${e.padEnd(10)} ${rps(e).toFixed(0).padStart(5)} req/s (rounds ${totals[e].rounds.join(', ')}), event loop busy ${busy(e).toFixed(2)} ms per request`);
    }
    lines.push(`    compiled/graphql-js: req/s ${(rps('compiled') / rps('graphql-js')).toFixed(2)}×, event loop per request ${(busy('compiled') / busy('graphql-js')).toFixed(2)}×`);
  }
  return [
    '',
    `Keelson Mesh bench: the runs subgraph alone — ${seed.projects} project references per request, ${seed.runsPerProject} runs each of ${seed.nodesPerRun} nodes; ${timing.rounds} rounds of ${timing.cellMs} ms per executor, the first alternating`,
    ...lines,
    '',
  ].join('\n');
}

runBench(main, progress);
