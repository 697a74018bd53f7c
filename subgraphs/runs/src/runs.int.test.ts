import { EventLog, EventNotifier, workflowsDigest } from '@keelson/platform';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseEnv, searchAttributes } from '@keelson/schema';
import { silentLogger } from '@keelson/service';
import { projectWorkflowsDir, Run, RunNode, RunStore, runsSettings, type ProjectRef, type ProjectsApi, type RibWorkflowCandidate } from '@keelson/runs';
import { connectClient } from '@keelson/temporal';
import type { Client } from '@temporalio/client';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db';
import { definitionOf, registerRun as storeRun } from '../../../test/support/registerRun';
import { gql, gqlData, registerCredentials } from '../../../test/support/client';
import { quietTemporalRuntime, testTemporalAddress } from '../../../test/support/temporalServer';
import { startRunsSubgraph, type RunningRuns } from './index';
import { In } from 'typeorm';
import { security, serviceCredentials } from '../../../test/support/auth';

quietTemporalRuntime();

const flow = (name: string, marker: string) => ({ name, description: marker, nodes: [{ id: 'a', type: 'bash', bash: 'true' }] });

describe('the runs subgraph', () => {
  let db: TestDatabase;
  let dir: string;
  let runs: RunningRuns;
  let store: RunStore;
  /** The test's own Temporal client, to inspect and end the workflows the subgraph starts. */
  let temporal: Client;
  const projects = new Map<string, ProjectRef>();
  const ribs: RibWorkflowCandidate[] = [
    { ribId: 'demo', origin: 'code', definition: flow('demo-refresh', 'demo code') },
    { ribId: 'demo', origin: 'code', definition: flow('shadowed', 'demo code') },
    { ribId: 'other', origin: 'code', definition: flow('other-flow', 'other code') },
  ];
  const projectsApi: ProjectsApi = {
    project: async (id) => projects.get(id) ?? null,
    acquireWorkspace: async () => {
      throw new Error('not in this test');
    },
    releaseWorkspace: async () => false,
  };

  const registerRun = async (opts: { projectId?: string; ribId?: string; startedByRibId?: string; status?: string }) => {
    const { id } = await storeRun(store, definitionOf(flow('made', 'made')), {
      scope: 'GLOBAL',
      projectId: opts.projectId ?? null,
      ribId: opts.ribId ?? null,
      startedByRibId: opts.startedByRibId ?? null,
      cwd: dir,
    });
    if (opts.status) await runs.services.dataSource.query('UPDATE runs SET status = $2 WHERE id = $1', [id, opts.status]);
    return id;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    dir = await mkdtemp(join(tmpdir(), 'keelson-runs-subgraph-'));
    await mkdir(join(dir, 'home', 'workflows'), { recursive: true });
    await writeFile(join(dir, 'home', 'workflows', 'shadowed.yaml'), 'name: shadowed\ndescription: global file\nnodes:\n  - { id: a, type: bash, bash: "true" }\n');
    await writeFile(join(dir, 'home', 'workflows', 'broken.yaml'), 'name: broken\nnodes:\n  - { id: a, type: bash, bash: "x", depends_on: [a] }\n');
    const settings = runsSettings(parseEnv({ KEELSON_HOME: join(dir, 'home'), TEMPORAL_TASK_QUEUE: `runs-subgraph-${randomUUID()}` }), {
      temporal: { address: testTemporalAddress(), uiUrl: 'http://127.0.0.1:8233' },
      projectsUrl: 'http://127.0.0.1:1/graphql',
    });
    runs = await startRunsSubgraph({
      databaseUrl: db.url,
      host: '127.0.0.1',
      port: 0,
      security,
      settings: { ...settings, ribWorkflows: { list: () => ribs } },
      projects: projectsApi,
      log: silentLogger(),
    });
    registerCredentials(runs.url, serviceCredentials);
    temporal = await connectClient({ address: testTemporalAddress() });
    store = new RunStore(runs.services.dataSource, new EventLog(runs.services.dataSource, new EventNotifier({ url: db.url, log: silentLogger() })));
  });

  afterAll(async () => {
    await temporal?.connection.close();
    await runs?.stop();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves the catalog with rib contributions under the file scopes, and the load errors naming file, field and reason', async () => {
    const { workflows, workflowLoadErrors } = await gqlData<{ workflows: { name: string; scope: string; ribId: string | null; description: string }[]; workflowLoadErrors: { scope: string; message: string }[] }>(
      runs.url,
      '{ workflows { name scope ribId description } workflowLoadErrors { scope message } }',
    );
    expect(workflows).toEqual([
      { name: 'demo-refresh', scope: 'RIB', ribId: 'demo', description: 'demo code' },
      { name: 'other-flow', scope: 'RIB', ribId: 'other', description: 'other code' },
      { name: 'plan-implement', scope: 'BUNDLED', ribId: null, description: expect.any(String) },
      { name: 'project-check', scope: 'BUNDLED', ribId: null, description: expect.any(String) },
      { name: 'shadowed', scope: 'GLOBAL', ribId: null, description: 'global file' },
    ]);
    expect(workflowLoadErrors).toEqual([
      { scope: 'GLOBAL', message: `${join(dir, 'home', 'workflows', 'broken.yaml')}: definition.nodes.0.depends_on.0: node "a" cannot depend on itself` },
    ]);

    const id = randomUUID();
    const root = join(dir, 'project');
    projects.set(id, { id, name: 'proj', rootPath: root, trusted: false, trustedWorkflowsDigest: null });
    await mkdir(projectWorkflowsDir(root), { recursive: true });
    await writeFile(join(projectWorkflowsDir(root), 'demo.yaml'), 'name: demo-refresh\ndescription: project file\nnodes:\n  - { id: a, type: bash, bash: "true" }\n');
    const scoped = await gqlData<{ kept: { scope: string; description: string }; own: { scope: string; declaredName: string; description: string; path: string } }>(
      runs.url,
      'query ($p: ID) { kept: workflow(name: "demo-refresh", projectId: $p) { scope description } own: workflow(name: "project:demo-refresh", projectId: $p) { scope declaredName description path } }',
      { p: id },
    );
    // The rib's workflow keeps its name in the project's scope; the project's own is listed beside it, qualified.
    expect(scoped.kept).toEqual({ scope: 'RIB', description: 'demo code' });
    expect(scoped.own).toEqual({ scope: 'PROJECT', declaredName: 'demo-refresh', description: 'project file', path: join(projectWorkflowsDir(root), 'demo.yaml') });
    const unknown = await gql(runs.url, 'query ($p: ID) { workflows(projectId: $p) { name } }', { p: randomUUID() });
    expect(unknown.errors?.[0]).toMatchObject({ extensions: { code: 'NOT_FOUND' } });
  });

  it('resolves Project.runs and Rib.runs / Rib.workflows for entity references, in a constant number of queries', async () => {
    const projectIds = [randomUUID(), randomUUID(), randomUUID()];
    const made: Record<string, string[]> = {};
    for (const p of projectIds) made[p] = [await registerRun({ projectId: p }), await registerRun({ projectId: p, status: 'SUCCEEDED' }), await registerRun({ projectId: p })];
    const ribRun = await registerRun({ ribId: 'demo' });
    const startedRun = await registerRun({ startedByRibId: 'demo' });

    const query = `query ($reps: [_Any!]!) { _entities(representations: $reps) {
      ... on Project { id runs(first: 2) { edges { node { id } } pageInfo { hasNextPage endCursor } } done: runs(status: SUCCEEDED) { edges { node { id status } } } }
      ... on Rib { id workflows { name } runs { edges { node { id } } } }
    } }`;
    const reps = [...projectIds.map((id) => ({ __typename: 'Project', id })), { __typename: 'Rib', id: 'demo' }, { __typename: 'Rib', id: 'nobody' }];
    const before = runs.queryCount();
    const { _entities } = await gqlData<{ _entities: Record<string, unknown>[] }>(runs.url, query, { reps });
    const queries = runs.queryCount() - before;

    projectIds.forEach((p, i) => {
      const e = _entities[i] as { runs: { edges: { node: { id: string } }[]; pageInfo: { hasNextPage: boolean } }; done: { edges: { node: { id: string; status: string } }[] } };
      expect(e.runs.edges.map((x) => x.node.id)).toEqual([made[p]![2], made[p]![1]]);
      expect(e.runs.pageInfo.hasNextPage).toBe(true);
      expect(e.done.edges).toEqual([{ node: { id: made[p]![1], status: 'SUCCEEDED' } }]);
    });
    expect(_entities[3]).toEqual({ id: 'demo', workflows: [{ name: 'demo-refresh' }], runs: { edges: [{ node: { id: startedRun } }, { node: { id: ribRun } }] } });
    expect(_entities[4]).toEqual({ id: 'nobody', workflows: [], runs: { edges: [] } });
    // Two page groups (first: 2 / status: SUCCEEDED) plus one for ribs: one statement each, runs and all.
    expect(queries).toBe(3);

    // The page's runs, mapped by hand from the lateral query's rows, are the entities TypeORM loads.
    const [page] = await runs.services.runs.pagesFor([{ owner: `project:${projectIds[0]}`, status: null, args: { first: 5, after: null } }]);
    const loaded = (await runs.services.runs.byIds(made[projectIds[0]!]!)).sort((a, b) => Number(b.seq) - Number(a.seq));
    expect(page!.edges.map((e) => e.node)).toEqual(loaded);
    expect(page!.edges[0]!.node).toBeInstanceOf(Run);
    // So are the nodes of those runs (batched, mapped by hand), in definition order.
    const nodeIds = loaded.map((r) => r.id);
    const nodes = await runs.services.runs.nodesOf(nodeIds);
    expect(nodes.length).toBeGreaterThan(0);
    expect(nodes.map((n) => n.position)).toEqual([...nodes.map((n) => n.position)].sort((a, b) => a - b));
    const byRunAndPosition = (a: RunNode, b: RunNode) => a.runId.localeCompare(b.runId) || a.position - b.position;
    const hydrated = await runs.services.dataSource.getRepository(RunNode).find({ where: { runId: In(nodeIds) } });
    expect([...nodes].sort(byRunAndPosition)).toEqual(hydrated.sort(byRunAndPosition));

    const next = await gqlData<{ _entities: { runs: { edges: { node: { id: string } }[]; pageInfo: { hasNextPage: boolean } } }[] }>(
      runs.url,
      'query ($reps: [_Any!]!, $after: String) { _entities(representations: $reps) { ... on Project { runs(first: 2, after: $after) { edges { node { id } } pageInfo { hasNextPage } } } } }',
      { reps: [{ __typename: 'Project', id: projectIds[0] }], after: (_entities[0] as { runs: { pageInfo: { endCursor: string } } }).runs.pageInfo.endCursor },
    );
    expect(next._entities[0]!.runs).toEqual({ edges: [{ node: { id: made[projectIds[0]!]![0] } }], pageInfo: { hasNextPage: false } });

    // Arguments are checked for every entity (parsed once per request, a refusal each time).
    const bad = await gql(runs.url, 'query ($reps: [_Any!]!) { _entities(representations: $reps) { ... on Project { runs(first: 501) { edges { node { id } } } } } }', {
      reps: projectIds.slice(0, 2).map((id) => ({ __typename: 'Project', id })),
    });
    expect(bad.errors?.map((e) => [e.path, e.extensions?.code])).toEqual([
      [['_entities', 0, 'runs'], 'BAD_USER_INPUT'],
      [['_entities', 1, 'runs'], 'BAD_USER_INPUT'],
    ]);
  });

  describe("a project's own workflows and its trust", () => {
    const START = 'mutation ($n: String!, $p: ID) { startWorkflow(name: $n, projectId: $p) { id workflowName scope status temporalWorkflowId } }';
    let project: ProjectRef;
    const runCount = async () => Number(((await runs.services.dataSource.query('SELECT count(*)::int AS n FROM runs')) as { n: number }[])[0]!.n);

    beforeAll(async () => {
      const id = randomUUID();
      project = { id, name: 'untrusted', rootPath: join(dir, 'untrusted'), trusted: false, trustedWorkflowsDigest: null };
      projects.set(id, project);
      await mkdir(projectWorkflowsDir(project.rootPath), { recursive: true });
      await writeFile(join(projectWorkflowsDir(project.rootPath), 'own.yaml'), 'name: own-flow\nnodes:\n  - { id: a, type: bash, bash: "true" }\n');
      await writeFile(join(projectWorkflowsDir(project.rootPath), 'check.yaml'), 'name: project-check\nnodes:\n  - { id: a, type: bash, bash: "true" }\n');
    });

    it('lists them, but refuses to start one while the project is untrusted: FORBIDDEN naming setProjectTrust, and no run', async () => {
      const { workflows } = await gqlData<{ workflows: { name: string; scope: string }[] }>(runs.url, 'query ($p: ID) { workflows(projectId: $p) { name scope } }', { p: project.id });
      expect(workflows).toEqual(expect.arrayContaining([{ name: 'own-flow', scope: 'PROJECT' }, { name: 'project:project-check', scope: 'PROJECT' }, { name: 'project-check', scope: 'BUNDLED' }]));
      const before = await runCount();
      for (const name of ['own-flow', 'project:project-check']) {
        const res = await gql(runs.url, START, { n: name, p: project.id });
        expect(res.errors?.[0]?.extensions).toMatchObject({ code: 'FORBIDDEN', status: 403 });
        expect(res.errors?.[0]?.message).toBe(
          `workflow "${name}" comes from project untrusted's own .keelson/workflows, and project untrusted is not trusted; an admin can trust it with setProjectTrust(projectId: "${project.id}", trusted: true)`,
        );
      }
      // The rib seams start runs through the same service: the check holds there too.
      await expect(runs.services.runs.start({ name: 'own-flow', projectId: project.id, startedByRibId: 'demo' })).rejects.toMatchObject({ code: 'FORBIDDEN' });
      expect(await runCount()).toBe(before);
    });

    it('lets a trusted project shadow a home workflow through the API (seed 000), and runs it; untrusted, the home one keeps the name', async () => {
      const id = randomUUID();
      const root = join(dir, 'shadowing');
      await mkdir(projectWorkflowsDir(root), { recursive: true });
      await writeFile(join(projectWorkflowsDir(root), 'mine.yaml'), 'name: shadowed\ndescription: the project\'s own\nnodes:\n  - { id: a, type: bash, bash: "true" }\n');
      const lookup = 'query ($p: ID) { workflow(name: "shadowed", projectId: $p) { scope description } qualified: workflow(name: "project:shadowed", projectId: $p) { scope } }';
      projects.set(id, { id, name: 'shadowing', rootPath: root, trusted: false, trustedWorkflowsDigest: null });
      await expect(gqlData(runs.url, lookup, { p: id })).resolves.toEqual({ workflow: { scope: 'GLOBAL', description: 'global file' }, qualified: { scope: 'PROJECT' } });
      projects.set(id, { id, name: 'shadowing', rootPath: root, trusted: true, trustedWorkflowsDigest: await workflowsDigest(root) });
      await expect(gqlData(runs.url, lookup, { p: id })).resolves.toEqual({ workflow: { scope: 'PROJECT', description: "the project's own" }, qualified: null });
      const { startWorkflow } = await gqlData<{ startWorkflow: { workflowName: string; scope: string; temporalWorkflowId: string } }>(runs.url, START, { n: 'shadowed', p: id });
      expect(startWorkflow).toMatchObject({ workflowName: 'shadowed', scope: 'PROJECT' });
      await temporal.workflow.getHandle(startWorkflow.temporalWorkflowId).terminate('test over');
    });

    it('refuses a start whose files are not the ones trust was given for (changed after the trust check): FORBIDDEN, no run', async () => {
      // The projects subgraph said trusted, for the files as they were; one changed before the catalog read them.
      const trustedFor = await workflowsDigest(project.rootPath);
      const own = join(projectWorkflowsDir(project.rootPath), 'own.yaml');
      const original = await readFile(own, 'utf8');
      projects.set(project.id, { ...project, trusted: true, trustedWorkflowsDigest: trustedFor });
      await writeFile(own, 'name: own-flow\nnodes:\n  - { id: a, type: bash, bash: "echo changed" }\n');
      const before = await runCount();
      try {
        const res = await gql(runs.url, START, { n: 'own-flow', p: project.id });
        expect(res.errors?.[0]?.extensions).toMatchObject({ code: 'FORBIDDEN', status: 403 });
        expect(res.errors?.[0]?.message).toMatch(/own \.keelson\/workflows, which changed while the run was starting/);
        expect(await runCount()).toBe(before);
      } finally {
        await writeFile(own, original);
      }
      expect(await workflowsDigest(project.rootPath)).toBe(trustedFor);
    });

    it('starts one once the project is trusted, under its catalog name, and refuses to resume it once trust is withdrawn', async () => {
      projects.set(project.id, { ...project, trusted: true, trustedWorkflowsDigest: await workflowsDigest(project.rootPath) });
      const { startWorkflow } = await gqlData<{ startWorkflow: { id: string; workflowName: string; scope: string; temporalWorkflowId: string } }>(runs.url, START, {
        n: 'project:project-check',
        p: project.id,
      });
      expect(startWorkflow).toMatchObject({ workflowName: 'project:project-check', scope: 'PROJECT' });
      expect(startWorkflow.temporalWorkflowId).toMatch(/^run-project:project-check-/);
      const handle = temporal.workflow.getHandle(startWorkflow.temporalWorkflowId);
      await handle.terminate('test over');
      await runs.services.dataSource.query(`UPDATE runs SET status = 'FAILED' WHERE id = $1`, [startWorkflow.id]);

      projects.set(project.id, { ...project, trusted: false, trustedWorkflowsDigest: null });
      const resumed = await gql(runs.url, 'mutation ($r: ID!) { resumeRun(runId: $r) { id } }', { r: startWorkflow.id });
      expect(resumed.errors?.[0]?.extensions).toMatchObject({ code: 'FORBIDDEN' });
      expect(resumed.errors?.[0]?.message).toContain('setProjectTrust');
    });
  });

  it('writes RUN_STARTED with the launch once the executor accepted the start, before any worker ran it, and only once', async () => {
    // No worker polls this test's task queue: whatever is recorded, the start itself wrote.
    const run = await runs.services.runs.start({ name: 'demo-refresh', startedByRibId: 'demo' });
    const handle = temporal.workflow.getHandle(run.temporalWorkflowId);
    const started = async () =>
      (await runs.services.dataSource.query(`SELECT payload FROM events WHERE stream = 'runs' AND key = $1 AND type = 'RUN_STARTED'`, [run.id])) as { payload: unknown }[];
    try {
      const { runId: executionId } = await handle.describe();
      expect(await started()).toEqual([{ payload: { runId: run.id, launch: 1 } }]);
      expect(await runs.services.dataSource.query('SELECT launch, temporal_run_id FROM run_launches WHERE run_id = $1', [run.id])).toEqual([
        { launch: 1, temporal_run_id: executionId },
      ]);
      // The launch's first activity opens the same launch when a worker gets to it: no second event.
      const opened = await store.beginLaunch(run.id, 1, executionId);
      expect(opened.run.id).toBe(run.id);
      expect(await started()).toHaveLength(1);
    } finally {
      await handle.terminate('test over');
    }
  });

  it('stamps a rib-started run with KeelsonRib and its workflow name for operators', async () => {
    const run = await runs.services.runs.start({ name: 'demo-refresh', startedByRibId: 'demo' });
    expect(run).toMatchObject({ workflowName: 'demo-refresh', startedByRibId: 'demo', ribId: 'demo', scope: 'RIB', status: 'RUNNING' });
    // Without a project it works in a scratch folder of its own, never in the Keelson home itself.
    expect(run.cwd).toBe(join(dir, 'home', 'runs', run.id, 'work'));
    const handle = temporal.workflow.getHandle(run.temporalWorkflowId);
    try {
      const description = await handle.describe();
      expect(description.searchAttributes).toMatchObject({
        [searchAttributes.kind]: ['run'],
        [searchAttributes.workflowName]: ['demo-refresh'],
        [searchAttributes.rib]: ['demo'],
      });
      expect(description.memo).toMatchObject({ title: 'demo-refresh — demo code', runId: run.id, launch: 1 });
      expect(runs.services.runs.temporalUiUrl(run.temporalWorkflowId)).toBe(`http://127.0.0.1:8233/namespaces/default/workflows/${run.temporalWorkflowId}`);
    } finally {
      await handle.terminate('test over');
    }
  });
});
