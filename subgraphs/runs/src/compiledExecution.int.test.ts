import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSubgraph, type SubgraphExecution } from '@keelson/kit';
import { bundledWorkflowsDir, openRunsDomain, type OpenedRunsDomain, type RunsExecutor } from '@keelson/runs';
import { ASSERTION_HEADER } from '@keelson/schema';
import { serviceIdentity, silentLogger, type Served } from '@keelson/service';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db';
import { security, testService } from '../../../test/support/auth';
import { answeredBy, type AnsweredBy } from '../../../test/support/compiledAnswers';
import { buildRunsSchema } from './schema';

/** Reads only: nothing these operations do reaches Temporal; a mutation that would says so. */
const noExecutor = new Proxy({}, { get: () => () => Promise.reject(new Error('no executor in this test')) }) as RunsExecutor;

interface Answer {
  status: number;
  body: unknown;
}

/**
 * The runs subgraph served twice over one database, once per executor: every operation is sent to
 * both and the answers (HTTP status and body) must be the same, errors included.
 */
describe('the compiled executor answers as graphql-js does', () => {
  let db: TestDatabase;
  let dir: string;
  let domain: OpenedRunsDomain;
  const served = {} as Record<SubgraphExecution, Served>;
  const project = randomUUID();
  const broken = randomUUID();
  const runIds: string[] = [];

  const post = async (execution: SubgraphExecution, query: string, variables?: Record<string, unknown>, operationName?: string): Promise<Answer> => {
    const res = await fetch(served[execution].url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [ASSERTION_HEADER]: await security.assertions.sign(testService) },
      body: JSON.stringify({ query, variables, operationName }),
    });
    return { status: res.status, body: await res.json() };
  };

  /**
   * Sends to both, asserts the two answers are equal and which engine of the compiled executor
   * answered (the graphql-js subgraph has none), and returns the answer.
   */
  const both = async (query: string, variables?: Record<string, unknown>, operationName?: string, by: AnsweredBy = 'graphql-jit'): Promise<Answer> => {
    const compiled = await answeredBy('runs', () => post('compiled', query, variables, operationName));
    const reference = await answeredBy('runs', () => post('graphql-js', query, variables, operationName));
    expect([compiled.by, reference.by]).toEqual([by, 'none']);
    expect(compiled.answer).toEqual(reference.answer);
    return compiled.answer;
  };

  const errorsOf = (answer: Answer) => (answer.body as { errors?: { message: string; path?: unknown[]; locations?: unknown[]; extensions?: { code?: string } }[] }).errors ?? [];

  beforeAll(async () => {
    db = await createTestDatabase();
    dir = await mkdtemp(join(tmpdir(), 'keelson-compiled-'));
    domain = await openRunsDomain({
      databaseUrl: db.url,
      settings: { keelsonHome: join(dir, 'home'), bundledWorkflowsDir, temporal: { address: 'unused', namespace: 'default', taskQueue: 'unused' }, projectsUrl: 'http://127.0.0.1:1/graphql', heartbeatTimeoutMs: 30_000 },
      executor: noExecutor,
      identity: serviceIdentity(security.assertions, 'runs'),
      log: silentLogger(),
    });
    const { schema } = await buildRunsSchema();
    for (const execution of ['compiled', 'graphql-js'] as const) {
      served[execution] = await startSubgraph({ name: 'runs', schema, host: '127.0.0.1', port: 0, security, log: silentLogger(), execution, context: (base) => ({ ...base, services: domain.services }) });
    }
    // Three runs of `project` (one still running: no completedAt), one of `broken` whose stored
    // status and node status are no values of their enums.
    const rows: [string, string, string, string | null][] = [
      [project, 'SUCCEEDED', 'SUCCEEDED', '2026-01-02T03:04:05.678Z'],
      [project, 'FAILED', 'FAILED', '2026-01-03T00:00:00.000Z'],
      [project, 'RUNNING', 'RUNNING', null],
      [broken, 'EXPLODED', 'MELTED', null],
    ];
    for (const [projectId, status, nodeStatus, completedAt] of rows) {
      const [{ id }] = (await domain.services.dataSource.query(
        `INSERT INTO runs (id, workflow_name, title, definition, scope, inputs, project_id, project_name, status, cwd, artifacts_dir, temporal_workflow_id, started_at, completed_at)
         VALUES (gen_random_uuid(), 'flow', 'a run', '{"name":"flow","nodes":[{"id":"a"}],"n":1.5,"nil":null}'::jsonb, 'GLOBAL', '{"who":"me"}'::jsonb, $1, 'p', $2, '/tmp', '/tmp', gen_random_uuid()::text, '2026-01-01T00:00:00.000Z', $3)
         RETURNING id`,
        [projectId, status, completedAt],
      )) as { id: string }[];
      runIds.push(id);
      await domain.services.dataSource.query(
        `INSERT INTO run_nodes (run_id, node_id, position, type, status) VALUES ($1, 'a', 1, 'bash', $2), ($1, 'b', 2, 'approval', 'PENDING')`,
        [id, nodeStatus],
      );
    }
  });

  afterAll(async () => {
    for (const s of Object.values(served)) await s?.stop();
    await domain?.close();
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const ENTITIES = `query Runs($representations: [_Any!]!, $f: Int, $a: String, $s: RunStatus) {
    _entities(representations: $representations) {
      __typename
      ... on Project { id runs(first: $f, after: $a, status: $s) { edges { cursor node { id __typename status scope workflowName inputs definition startedAt completedAt launch nodes { id status type startedAt } project { __typename id } } } pageInfo { hasNextPage endCursor } } }
      ... on Rib { id }
      ... on Run { id status title }
    }
  }`;

  it('answers entity fetches alike: custom scalars, enums, __typename, the _Entity union over several types', async () => {
    const answer = await both(ENTITIES, { representations: [{ __typename: 'Project', id: project }, { __typename: 'Rib', id: 'demo' }, { __typename: 'Run', id: runIds[0] }], f: 2 });
    expect(answer.status).toBe(200);
    expect(errorsOf(answer)).toEqual([]);
    const [first, rib, run] = (answer.body as { data: { _entities: Record<string, unknown>[] } }).data._entities as [
      { __typename: string; runs: { edges: { node: { status: string; completedAt: string | null; inputs: unknown } }[]; pageInfo: { hasNextPage: boolean } } },
      { __typename: string },
      { __typename: string; status: string },
    ];
    expect(first.__typename).toBe('Project');
    expect(first.runs.edges.map((e) => e.node.status)).toEqual(['RUNNING', 'FAILED']);
    expect(first.runs.edges[1].node.completedAt).toBe('2026-01-03T00:00:00.000Z');
    expect(first.runs.edges[0].node.inputs).toEqual({ who: 'me' });
    expect(first.runs.pageInfo.hasNextPage).toBe(true);
    expect([rib.__typename, run.__typename, run.status]).toEqual(['Rib', 'Run', 'SUCCEEDED']);
  });

  it('applies variable defaults, literals, aliases, fragments and @skip/@include alike', async () => {
    const query = `query Paged($representations: [_Any!]!, $f: Int = 1, $withNodes: Boolean = false, $noCursor: Boolean!) {
      _entities(representations: $representations) {
        ... on Project { newest: runs(first: $f) { ...page } oldest: runs(first: 10, status: SUCCEEDED) { ...page } }
      }
    }
    fragment page on RunConnection { edges { cursor @skip(if: $noCursor) node { id nodes @include(if: $withNodes) { id } } } pageInfo { endCursor } }
    query Other { __typename }`;
    const answer = await both(query, { representations: [{ __typename: 'Project', id: project }], noCursor: true }, 'Paged');
    const [p] = (answer.body as { data: { _entities: { newest: { edges: Record<string, unknown>[] }; oldest: { edges: unknown[] } }[] } }).data._entities;
    expect(p.newest.edges).toHaveLength(1);
    expect(Object.keys(p.newest.edges[0])).toEqual(['node']);
    expect(p.oldest.edges).toHaveLength(1);
    expect((await both(query, { representations: [], noCursor: false }, 'Other')).body).toEqual({ data: { __typename: 'Query' } });
  });

  it('raises a MeshError from a resolver alike: message, path, locations, BAD_USER_INPUT, null bubbling to the entity', async () => {
    const answer = await both(ENTITIES, { representations: [{ __typename: 'Project', id: project }, { __typename: 'Rib', id: 'demo' }], f: 501 });
    expect(answer.status).toBe(200);
    const [error] = errorsOf(answer);
    expect(error.extensions?.code).toBe('BAD_USER_INPUT');
    expect(error.path).toEqual(['_entities', 0, 'runs']);
    expect(error.locations).toHaveLength(1);
    expect((answer.body as { data: { _entities: unknown[] } }).data._entities).toEqual([null, { __typename: 'Rib', id: 'demo' }]);
    await both(ENTITIES, { representations: [{ __typename: 'Project', id: project }], a: 'not a cursor' });
  });

  it('masks a value its enum cannot serialize alike, nulling up to the nearest nullable field and reporting one error there', async () => {
    // graphql-jit alone would also report the run's node status, a second error under the nulled
    // entity: graphql-js answers again.
    const answer = await both(ENTITIES, { representations: [{ __typename: 'Project', id: broken }, { __typename: 'Project', id: project }], f: 1 }, undefined, 'graphql-js');
    expect(errorsOf(answer)).toEqual([
      { message: 'Internal server error', path: ['_entities', 0, 'runs', 'edges', 0, 'node', 'status'], locations: [expect.any(Object)], extensions: { code: 'INTERNAL_SERVER_ERROR', status: 500 } },
    ]);
    const entities = (answer.body as { data: { _entities: unknown[] } }).data._entities;
    expect(entities[0]).toBeNull();
    expect(entities[1]).not.toBeNull();
    const run = await both(`query($r: [_Any!]!) { _entities(representations: $r) { ... on Run { id nodes { id status } } } }`, { r: [{ __typename: 'Run', id: runIds[3] }] });
    expect((run.body as { data: { _entities: unknown[] } }).data._entities).toEqual([null]);
    expect(errorsOf(run).map((e) => e.path)).toEqual([['_entities', 0, 'nodes', 0, 'status']]);
  });

  it('masks a non-null field that resolves to null alike, nulling only its nullable parent', async () => {
    await domain.services.dataSource.query(`UPDATE runs SET checkout = '{"path": "/elsewhere"}'::jsonb WHERE id = $1`, [runIds[1]]);
    const answer = await both(`query($r: [_Any!]!) { _entities(representations: $r) { ... on Run { id checkout { path worktreeEstablished } status } } }`, { r: [{ __typename: 'Run', id: runIds[1] }] });
    expect(errorsOf(answer)).toEqual([
      { message: 'Internal server error', path: ['_entities', 0, 'checkout', 'worktreeEstablished'], locations: [{ line: 1, column: 88 }], extensions: { code: 'INTERNAL_SERVER_ERROR', status: 500 } },
    ]);
    expect((answer.body as { data: unknown }).data).toEqual({ _entities: [{ id: runIds[1], checkout: null, status: 'FAILED' }] });
  });

  it('rejects variables that do not coerce alike: BAD_USER_INPUT, HTTP 400, nothing executed', async () => {
    const reps = [{ __typename: 'Project', id: project }];
    for (const variables of [{ representations: reps, f: 'two' }, { representations: reps, s: 'NOPE' }, { f: 1 }, { representations: reps, a: { not: 'a string' } }]) {
      // graphql-jit answers without data (no resolver ran): graphql-js answers with its own errors.
      const answer = await both(ENTITIES, variables, undefined, 'graphql-js');
      expect(answer.status).toBe(400);
      expect(errorsOf(answer).length).toBeGreaterThan(0);
      expect(errorsOf(answer).every((e) => e.extensions?.code === 'BAD_USER_INPUT')).toBe(true);
      expect(answer.body).not.toHaveProperty('data');
    }
  });

  it('answers root queries, a literal that does not parse and a mutation alike', async () => {
    await both(`{ runs(first: 2, status: RUNNING) { edges { node { id status startedAt } } } run(id: "${runIds[0]}") { id nodes { id } } }`);
    const invalid = await both(`{ runs(first: "two") { edges { cursor } } }`, undefined, undefined, 'none');
    expect(errorsOf(invalid)[0].extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    const missing = await both(`mutation { cancelRun(runId: "${randomUUID()}") { __typename } }`, undefined, undefined, 'graphql-js');
    expect(errorsOf(missing)).toHaveLength(1);
    expect(await both(`{ _service { sdl } }`)).toMatchObject({ status: 200 });
  });
});
