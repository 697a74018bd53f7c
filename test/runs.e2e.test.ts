import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { searchAttributes } from '@keelson/schema';
import { findTemporalCli } from '@keelson/temporal';
import { gql, gqlData, subscribeResumable } from './support/client';
import { startTestMesh, type TestMesh } from './support/mesh';
import { getRun, projectWithWorkflow, respond, startWorkflow, waitForRun } from './support/runs';
import { quietTemporalRuntime } from './support/temporalServer';
import { pidsMarked } from './support/workflowFixtures';

quietTemporalRuntime();
const run = promisify(execFile);

/**
 * Two bash nodes that each finish only once the other has started (a rendezvous: they must run in
 * parallel), an approval gate naming two artifacts, and a last node.
 */
const GATED = `
name: gated-build
description: Two parallel steps, a human gate, then a final step.
inputs:
  topic: { required: true }
nodes:
  - id: plan
    type: bash
    bash: |
      touch "$ARTIFACTS_DIR/plan.started"
      for i in $(seq 1200); do [ -f "$ARTIFACTS_DIR/lint.started" ] && break; sleep 0.05; done
      test -f "$ARTIFACTS_DIR/lint.started"
      printf '# Plan for %s\\nship it\\n' "$KEELSON_INPUT_TOPIC" > "$ARTIFACTS_DIR/plan.md"
      echo planned
  - id: lint
    type: bash
    bash: |
      touch "$ARTIFACTS_DIR/lint.started"
      for i in $(seq 1200); do [ -f "$ARTIFACTS_DIR/plan.started" ] && break; sleep 0.05; done
      test -f "$ARTIFACTS_DIR/plan.started" && echo linted
  - id: gate
    type: approval
    depends_on: [plan, lint]
    prompt: Approve $ARTIFACTS_DIR/plan.md? (also see $ARTIFACTS_DIR/missing.md)
  - id: ship
    type: bash
    depends_on: [gate]
    bash: echo "shipped after $(cat "$ARTIFACTS_DIR/plan.md" | head -1)"
`;

const SLEEPER = `
name: sleeper
nodes:
  - id: nap
    type: bash
    bash: |
      echo started > "$ARTIFACTS_DIR/nap.started"
      exec -a "keelson-nap-$KEELSON_RUN_ID" sleep 600
`;

/** Whether a process marked `marker` (a node's `exec -a` name) still runs. */
const liveWithMarker = (marker: string) => pidsMarked(marker).length > 0;

interface EventView {
  cursor: string;
  type: string;
  runId: string;
  nodeId: string | null;
  pauseId: string | null;
}

const EVENT_FIELDS = 'cursor type runId nodeId pauseId';

describe('runs through the gateway', () => {
  let mesh: TestMesh;
  let url: string;

  beforeAll(async () => {
    // Cancels reach a node on its next heartbeat (every second), not at the timeout; 10 s keeps a loaded
    // machine's stalls from costing a node a retry.
    mesh = await startTestMesh({ KEELSON_RUN_HEARTBEAT_TIMEOUT_MS: '10000' });
    url = mesh.gatewayUrl;
  });

  afterAll(async () => {
    await mesh?.teardown();
  });

  it('runs two bash nodes in parallel, pauses on the gate with its artifacts, rejects a stale pauseId, and succeeds on the answer, streaming every transition in order', async () => {
    const project = await projectWithWorkflow(url, 'gated', { 'gated-build.yaml': GATED });
    const events = subscribeResumable<{ runEvents: EventView }>(
      mesh.gatewayWsUrl,
      `subscription ($after: String) { runEvents(after: $after) { ${EVENT_FIELDS} run { workflowName } } }`,
    );
    // The subscription is live once it is acknowledged; an event before that would be replayed anyway (no cursor = from the start).
    const started = await startWorkflow(url, 'gated-build', { projectId: project.id, inputs: { topic: 'mesh' } });
    expect(started).toMatchObject({ workflowName: 'gated-build', status: 'RUNNING', launch: 1, cwd: project.rootPath });
    expect(started.temporalWorkflowId).toMatch(/^run-gated-build-[0-9a-f]{8}$/);
    expect(started.temporalUiUrl).toContain(`/workflows/${started.temporalWorkflowId}`);

    const paused = await waitForRun(url, started.id, (r) => r.status === 'PAUSED');
    expect(paused.pendingApproval).toMatchObject({
      nodeId: 'gate',
      prompt: 'Approve $ARTIFACTS_DIR/plan.md? (also see $ARTIFACTS_DIR/missing.md)',
      artifacts: [
        { path: 'plan.md', text: '# Plan for mesh\nship it\n', truncated: false, error: null },
        { path: 'missing.md', text: null, error: 'not found' },
      ],
    });
    const { pauseId } = paused.pendingApproval!;
    const byId = Object.fromEntries(paused.nodes.map((n) => [n.id, n]));
    expect(byId.plan).toMatchObject({ status: 'SUCCEEDED', output: 'planned\n', exitCode: 0, attempt: 1 });
    expect(byId.lint).toMatchObject({ status: 'SUCCEEDED', output: 'linted\n' });
    expect(byId.gate!.status).toBe('WAITING');
    expect(byId.ship!.status).toBe('PENDING');
    // Parallel: each waited for the other to start (the rendezvous), so each started before the other finished.
    const t = (s: string | null) => new Date(s!).getTime();
    expect(t(byId.plan!.startedAt)).toBeLessThan(t(byId.lint!.completedAt));
    expect(t(byId.lint!.startedAt)).toBeLessThan(t(byId.plan!.completedAt));

    const stale = await respond(url, started.id, 'gate', 'approve', 'not-the-current-pause');
    expect(stale).toMatchObject({ ok: false, duplicate: false });
    expect(stale.error).toBe(`pauseId not-the-current-pause is stale: gate "gate" is open with pause ${pauseId}`);
    const tooLong = await respond(url, started.id, 'gate', 'x'.repeat(16 * 1024 + 1), pauseId);
    expect(tooLong).toMatchObject({ ok: false, error: 'text: must be at most 16384 bytes, got 16385' });
    const wrongGate = await respond(url, started.id, 'ship', 'approve');
    expect(wrongGate).toMatchObject({ ok: false, error: 'gate "ship" is not open: "ship" is a bash node, not an approval' });
    expect((await getRun(url, started.id)).status).toBe('PAUSED');

    await expect(respond(url, started.id, 'gate', 'approve', pauseId)).resolves.toEqual({
      ok: true,
      error: null,
      pauseId,
      decision: 'approved',
      duplicate: false,
    });
    await expect(respond(url, started.id, 'gate', 'approve', pauseId)).resolves.toMatchObject({ ok: true, duplicate: true });
    const second = await respond(url, started.id, 'gate', 'actually, no', pauseId);
    expect(second).toMatchObject({ ok: false });
    expect(second.error).toMatch(/already answered; one decision is recorded per pause/);

    const done = await waitForRun(url, started.id, (r) => r.status === 'SUCCEEDED');
    expect(done.pendingApproval).toBeNull();
    expect(done.nodes.map((n) => [n.id, n.status])).toEqual([
      ['plan', 'SUCCEEDED'],
      ['lint', 'SUCCEEDED'],
      ['gate', 'SUCCEEDED'],
      ['ship', 'SUCCEEDED'],
    ]);
    expect(done.nodes.find((n) => n.id === 'gate')!.output).toBe('approve');
    expect(done.nodes.find((n) => n.id === 'ship')!.output).toBe('shipped after # Plan for mesh\n');

    // Every transition, in order, exactly as the log holds them.
    const { run: logged } = await gqlData<{ run: { events: { edges: { node: EventView }[]; pageInfo: { hasNextPage: boolean } } } }>(
      url,
      `query ($id: ID!) { run(id: $id) { events(first: 100) { edges { node { ${EVENT_FIELDS} } } pageInfo { hasNextPage } } } }`,
      { id: started.id },
    );
    const log = logged.events.edges.map((e) => e.node);
    const streamed = (await events.take(log.length, 20_000)).map((r) => {
      expect(r.errors).toBeUndefined();
      return r.data!.runEvents;
    });
    await events.close();
    expect(streamed.map(({ cursor, type, nodeId, pauseId: p }) => ({ cursor, type, nodeId, pauseId: p }))).toEqual(
      log.map(({ cursor, type, nodeId, pauseId: p }) => ({ cursor, type, nodeId, pauseId: p })),
    );
    const cursors = streamed.map((e) => Number(e.cursor));
    expect([...cursors].sort((a, b) => a - b)).toEqual(cursors);
    const seen = streamed.map((e) => (e.nodeId ? `${e.type}:${e.nodeId}` : e.type));
    expect(seen[0]).toBe('RUN_STARTED');
    expect(seen.at(-1)).toBe('RUN_SUCCEEDED');
    const at = (s: string) => {
      const i = seen.indexOf(s);
      expect({ missing: s, i }).toEqual({ missing: s, i: expect.any(Number) });
      expect(i).toBeGreaterThanOrEqual(0);
      return i;
    };
    for (const node of ['plan', 'lint']) expect(at(`NODE_STARTED:${node}`)).toBeLessThan(at(`NODE_SUCCEEDED:${node}`));
    expect(at('NODE_SUCCEEDED:plan')).toBeLessThan(at('NODE_WAITING:gate'));
    expect(at('NODE_SUCCEEDED:lint')).toBeLessThan(at('NODE_WAITING:gate'));
    expect(seen.slice(at('NODE_WAITING:gate'))).toEqual([
      'NODE_WAITING:gate',
      'RUN_PAUSED:gate',
      'APPROVAL_ANSWERED:gate',
      'NODE_SUCCEEDED:gate',
      'RUN_RESUMED:gate',
      'NODE_STARTED:ship',
      'NODE_SUCCEEDED:ship',
      'RUN_SUCCEEDED',
    ]);
    expect(seen.filter((s) => s === 'RUN_STARTED')).toHaveLength(1);
    expect(streamed.find((e) => e.type === 'RUN_PAUSED')!.pauseId).toBe(pauseId);

    // The project sees its run through federation (Project.runs is the runs subgraph's).
    const { project: viaProject } = await gqlData<{ project: { name: string; runs: { edges: { node: { id: string; status: string } }[] } } }>(
      url,
      'query ($id: ID) { project(id: $id) { name runs(first: 5) { edges { node { id status } } } } }',
      { id: project.id },
    );
    expect(viaProject).toEqual({ name: 'gated', runs: { edges: [{ node: { id: started.id, status: 'SUCCEEDED' } }] } });
  });

  it('finds the run with the real temporal CLI by its search attributes', async () => {
    const project = await projectWithWorkflow(url, 'listed', { 'quick.yaml': 'name: quick\nnodes:\n  - { id: one, type: bash, bash: "true" }\n' });
    const started = await startWorkflow(url, 'quick', { projectId: project.id });
    await waitForRun(url, started.id, (r) => r.status === 'SUCCEEDED');
    const cli = await findTemporalCli();
    if (!cli) throw new Error('the temporal CLI is missing; globalSetup says how to build it');
    const query = `${searchAttributes.workflowName}='quick' AND ${searchAttributes.kind}='run' AND ${searchAttributes.project}='listed'`;
    let listed: { execution: { workflowId: string } }[] = [];
    for (let i = 0; i < 50 && !listed.some((r) => r.execution.workflowId === started.temporalWorkflowId); i++) {
      if (i) await new Promise((r) => setTimeout(r, 100));
      const { stdout } = await run(cli, ['workflow', 'list', '--address', mesh.temporal.address, '--query', query, '-o', 'json']);
      listed = stdout.trim() ? JSON.parse(stdout) : [];
    }
    expect(listed.map((r) => r.execution.workflowId)).toEqual([started.temporalWorkflowId]);
    const { stdout } = await run(cli, ['workflow', 'describe', '--address', mesh.temporal.address, '--workflow-id', started.temporalWorkflowId, '-o', 'json']);
    expect(JSON.stringify(JSON.parse(stdout))).toContain('quick in listed');
  });

  it("federates Rib.runs and Rib.workflows onto the ribs subgraph's Rib, and shows who started the run", async () => {
    const project = await projectWithWorkflow(url, 'ribbed', { 'quick.yaml': 'name: quick\nnodes:\n  - { id: one, type: bash, bash: "true" }\n' });
    const started = await mesh.runs.services.runs.start({ name: 'quick', projectId: project.id, startedByRibId: 'notes' });
    await waitForRun(url, started.id, (r) => r.status === 'SUCCEEDED');
    const { rib } = await gqlData<{ rib: { id: string; displayName: string; workflows: unknown[]; runs: { edges: { node: { id: string; startedByRibId: string } }[] } } }>(
      url,
      'query { rib(id: "notes") { id displayName workflows { name } runs { edges { node { id startedByRibId } } } } }',
    );
    expect(rib).toMatchObject({ id: 'notes', displayName: expect.any(String), workflows: [], runs: { edges: [{ node: { id: started.id, startedByRibId: 'notes' } }] } });
  });

  it('cancelRun kills a sleeping bash node\'s process within a few heartbeats', async () => {
    const project = await projectWithWorkflow(url, 'sleepy', { 'sleeper.yaml': SLEEPER });
    const started = await startWorkflow(url, 'sleeper', { projectId: project.id });
    const marker = `keelson-nap-${started.id}`;
    for (let i = 0; i < 200 && !liveWithMarker(marker); i++) await new Promise((r) => setTimeout(r, 50));
    expect(liveWithMarker(marker)).toBe(true);

    const cancelledAt = Date.now();
    const { cancelRun } = await gqlData<{ cancelRun: { ok: boolean; error: string | null } }>(url, 'mutation ($id: ID!) { cancelRun(runId: $id) { ok error } }', {
      id: started.id,
    });
    expect(cancelRun).toEqual({ ok: true, error: null });
    while (liveWithMarker(marker) && Date.now() - cancelledAt < 10_000) await new Promise((r) => setTimeout(r, 50));
    const killedAfter = Date.now() - cancelledAt;
    expect(liveWithMarker(marker)).toBe(false);
    expect(killedAfter).toBeLessThan(3000);

    const cancelled = await waitForRun(url, started.id, (r) => r.status === 'CANCELLED');
    expect(cancelled.error).toBe('cancelled by request');
    expect(cancelled.nodes[0]).toMatchObject({ id: 'nap', status: 'CANCELLED' });
    // Written by the worker, naming who cancelled (the workflow carried them from its cancelledBy signal).
    const [finished] = (await mesh.runs.services.dataSource.query(`SELECT actor->>'subject' AS subject FROM events WHERE stream = 'runs' AND key = $1 AND type = 'RUN_CANCELLED'`, [started.id])) as { subject: string | null }[];
    expect(finished?.subject).toMatch(/^token:/);
    const again = await gqlData<{ cancelRun: { ok: boolean; error: string | null } }>(url, 'mutation ($id: ID!) { cancelRun(runId: $id) { ok error } }', {
      id: started.id,
    });
    expect(again.cancelRun).toEqual({ ok: false, error: `run ${started.id} already CANCELLED` });
    console.log(`cancelRun → process group killed after ${killedAfter} ms (heartbeats every 1000 ms)`);
  });

  it('resumeRun relaunches a FAILED run from its first incomplete node, with the same run id and workflow id', async () => {
    const project = await projectWithWorkflow(url, 'fixable', {
      'fix-me.yaml': `
name: fix-me
nodes:
  - { id: setup, type: bash, bash: 'echo setup >> "$ARTIFACTS_DIR/effects"' }
  - { id: check, type: bash, depends_on: [setup], bash: 'test -f "$ARTIFACTS_DIR/fixed"' }
  - { id: after, type: bash, depends_on: [check], bash: 'echo after >> "$ARTIFACTS_DIR/effects"' }
`,
    });
    const started = await startWorkflow(url, 'fix-me', { projectId: project.id });
    const failed = await waitForRun(url, started.id, (r) => r.status === 'FAILED');
    expect(failed.error).toBe('node "check" failed: bash node "check" exited with code 1');
    await writeFile(join(started.artifactsDir, 'fixed'), '');

    const { resumeRun } = await gqlData<{ resumeRun: { id: string; status: string; launch: number; temporalWorkflowId: string; error: string | null } }>(
      url,
      'mutation ($id: ID!) { resumeRun(runId: $id) { id status launch temporalWorkflowId error } }',
      { id: started.id },
    );
    expect(resumeRun).toEqual({ id: started.id, status: 'RUNNING', launch: 2, temporalWorkflowId: started.temporalWorkflowId, error: null });
    const done = await waitForRun(url, started.id, (r) => r.status === 'SUCCEEDED');
    expect(done.nodes.map((n) => [n.id, n.status])).toEqual([
      ['setup', 'SUCCEEDED'],
      ['check', 'SUCCEEDED'],
      ['after', 'SUCCEEDED'],
    ]);
    expect(await readFile(join(started.artifactsDir, 'effects'), 'utf8')).toBe('setup\nafter\n');
    const { run: logged } = await gqlData<{ run: { events: { edges: { node: { type: string; launch: number } }[] } } }>(
      url,
      'query ($id: ID!) { run(id: $id) { events { edges { node { type launch } } } } }',
      { id: started.id },
    );
    const launches = logged.events.edges.map((e) => e.node).filter((e) => e.type.startsWith('RUN_'));
    expect(launches).toEqual([
      { type: 'RUN_STARTED', launch: 1 },
      { type: 'RUN_FAILED', launch: 1 },
      { type: 'RUN_STARTED', launch: 2 },
      { type: 'RUN_SUCCEEDED', launch: 2 },
    ]);
    const again = await gql(url, 'mutation ($id: ID!) { resumeRun(runId: $id) { id } }', { id: started.id });
    expect(again.errors?.[0]).toMatchObject({
      message: `run ${started.id} is SUCCEEDED; only a FAILED or CANCELLED run can be resumed`,
      extensions: { code: 'CONFLICT' },
    });
  });

  it('resumeRun reopens the gate of a cancelled run with a new pause; the old pauseId is refused', async () => {
    const project = await projectWithWorkflow(url, 'regate', { 'gated-build.yaml': GATED });
    const started = await startWorkflow(url, 'gated-build', { projectId: project.id, inputs: { topic: 'again' } });
    const first = (await waitForRun(url, started.id, (r) => r.status === 'PAUSED')).pendingApproval!;
    await gqlData(url, 'mutation ($id: ID!) { cancelRun(runId: $id) { ok } }', { id: started.id });
    const cancelled = await waitForRun(url, started.id, (r) => r.status === 'CANCELLED');
    expect(cancelled.pendingApproval).toBeNull();
    expect(cancelled.nodes.find((n) => n.id === 'gate')!.status).toBe('CANCELLED');
    const late = await respond(url, started.id, 'gate', 'approve', first.pauseId);
    expect(late).toMatchObject({ ok: false, error: `pause ${first.pauseId} of gate "gate" is closed: the run cancelled` });

    await gqlData(url, 'mutation ($id: ID!) { resumeRun(runId: $id) { id } }', { id: started.id });
    const reopened = (await waitForRun(url, started.id, (r) => r.status === 'PAUSED')).pendingApproval!;
    expect(reopened.nodeId).toBe('gate');
    expect(reopened.pauseId).not.toBe(first.pauseId);
    const stale = await respond(url, started.id, 'gate', 'approve', first.pauseId);
    expect(stale.ok).toBe(false);
    await expect(respond(url, started.id, 'gate', 'approve', reopened.pauseId)).resolves.toMatchObject({ ok: true });
    const done = await waitForRun(url, started.id, (r) => r.status === 'SUCCEEDED');
    expect(done.nodes.map((n) => [n.id, n.status])).toEqual([
      ['plan', 'SUCCEEDED'],
      ['lint', 'SUCCEEDED'],
      ['gate', 'SUCCEEDED'],
      ['ship', 'SUCCEEDED'],
    ]);
    expect(done.nodes.find((n) => n.id === 'gate')!.attempt).toBe(2);
    // Nodes that completed in launch 1 did not run again: launch 2 started only the gate's successor.
    // (A loaded machine may retry a node within launch 1 after a missed heartbeat, so attempts alone
    // do not tell launches apart.)
    const { run: logged } = await gqlData<{ run: { events: { edges: { node: { type: string; launch: number; nodeId: string | null } }[] } } }>(
      url,
      'query ($id: ID!) { run(id: $id) { events(first: 100) { edges { node { type launch nodeId } } } } }',
      { id: started.id },
    );
    const startedIn = (launch: number) =>
      [...new Set(logged.events.edges.map((e) => e.node).filter((e) => e.type === 'NODE_STARTED' && e.launch === launch).map((e) => e.nodeId))].sort();
    expect(startedIn(1)).toEqual(['lint', 'plan']);
    expect(startedIn(2)).toEqual(['ship']);
  });

  it('runs a worktree.enabled workflow in a leased worktree of the project and releases it when the run succeeds', async () => {
    const project = await projectWithWorkflow(url, 'isolated', {
      'in-worktree.yaml': `
name: in-worktree
worktree: { enabled: true }
nodes:
  - { id: where, type: bash, bash: 'pwd; git rev-parse --abbrev-ref HEAD; echo change > made-here.txt' }
  - { id: gate, type: approval, depends_on: [where], prompt: "Keep it?" }
`,
    });
    const started = await startWorkflow(url, 'in-worktree', { projectId: project.id });
    const paused = await waitForRun(url, started.id, (r) => r.status === 'PAUSED');
    const checkoutQuery = `query ($id: ID!, $p: ID) {
      run(id: $id) { cwd checkout { path branch worktreeEstablished } }
      project(id: $p) { workspaces { path branch } }
    }`;
    const during = await gqlData<{ run: { cwd: string; checkout: { path: string | null; branch: string | null; worktreeEstablished: boolean } }; project: { workspaces: { path: string; branch: string }[] } }>(
      url,
      checkoutQuery,
      { id: started.id, p: project.id },
    );
    expect(during.run.checkout).toMatchObject({ worktreeEstablished: true, branch: expect.stringMatching(/^keelson\/isolated-[0-9a-f]{8}$/) });
    expect(during.run.cwd).toBe(during.run.checkout.path);
    expect(during.project.workspaces).toEqual([{ path: during.run.checkout.path, branch: during.run.checkout.branch }]);
    expect(paused.nodes[0]!.output).toBe(`${during.run.checkout.path}\n${during.run.checkout.branch}\n`);
    // The live checkout is untouched: the change landed in the worktree.
    await expect(readFile(join(project.rootPath, 'made-here.txt'), 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await readFile(join(during.run.checkout.path!, 'made-here.txt'), 'utf8')).toBe('change\n');

    await respond(url, started.id, 'gate', 'approve', paused.pendingApproval!.pauseId);
    await waitForRun(url, started.id, (r) => r.status === 'SUCCEEDED');
    const after = await gqlData<{ run: { checkout: unknown }; project: { workspaces: unknown[] } }>(url, checkoutQuery, { id: started.id, p: project.id });
    expect(after.run.checkout).toEqual({ path: null, branch: null, worktreeEstablished: true });
    expect(after.project.workspaces).toEqual([]);
  });

  it('fails a worktree run whose project cannot be leased, saying why, with nothing run', async () => {
    // A populated folder that is not a git repository is registered untouched: it has no HEAD to branch from.
    const plain = join(mesh.dir, 'not-git');
    await mkdir(join(plain, '.keelson', 'workflows'), { recursive: true });
    await writeFile(join(plain, 'keep.txt'), 'not a repository');
    await writeFile(join(plain, '.keelson', 'workflows', 'iso.yaml'), 'name: iso\nworktree: { enabled: true }\nnodes:\n  - { id: a, type: bash, bash: "echo ran" }\n');
    const { createProject: nonGit } = await gqlData<{ createProject: { id: string } }>(
      url,
      'mutation ($r: String) { createProject(input: { name: "not-git", rootPath: $r }) { id } }',
      { r: plain },
    );
    // A folder that brings its own .keelson/workflows is registered untrusted: the operator trusts it.
    await gqlData(url, 'mutation ($p: ID!) { setProjectTrust(projectId: $p, trusted: true) { id } }', { p: nonGit.id });
    const started = await startWorkflow(url, 'iso', { projectId: nonGit.id });
    const failed = await waitForRun(url, started.id, (r) => r.status === 'FAILED');
    expect(failed.error).toMatch(/^the run could not begin: project "not-git" has no commit yet \(not a git repository\)/);
    expect(failed.nodes).toMatchObject([{ id: 'a', status: 'PENDING', attempt: 0 }]);
    const { run: view } = await gqlData<{ run: { checkout: unknown } }>(url, 'query ($id: ID!) { run(id: $id) { checkout { path branch worktreeEstablished } } }', { id: started.id });
    expect(view.checkout).toEqual({ path: null, branch: null, worktreeEstablished: false });
  });

  it('fails a worktree run whose workspace preparation fails, saying why, with nothing run and no lease left', async () => {
    const project = await projectWithWorkflow(url, 'unprepared', {
      'prep.yaml': 'name: prep\nworktree: { enabled: true }\nnodes:\n  - { id: a, type: bash, bash: "echo ran" }\n',
    });
    // Committed, so the worktree has them: package.json wants what the lockfile does not pin, and `npm ci` refuses.
    await writeFile(join(project.rootPath, 'package.json'), JSON.stringify({ name: 'p', version: '1.0.0', private: true, dependencies: { 'left-pad': '1.3.0' } }));
    await writeFile(
      join(project.rootPath, 'package-lock.json'),
      JSON.stringify({ name: 'p', version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name: 'p', version: '1.0.0' } } }),
    );
    const git = (...args: string[]) => run('git', ['-c', 'user.name=Mesh Test', '-c', 'user.email=mesh@example.com', ...args], { cwd: project.rootPath });
    await git('add', 'package.json', 'package-lock.json');
    await git('commit', '--quiet', '-m', 'deps');

    const started = await startWorkflow(url, 'prep', { projectId: project.id });
    const failed = await waitForRun(url, started.id, (r) => r.status === 'FAILED');
    expect(failed.error).toMatch(/^the run could not begin: preparing a workspace of "unprepared" failed: `npm ci --no-audit --no-fund` \(from package-lock.json\) exited with code \d+/);
    expect(failed.nodes).toMatchObject([{ id: 'a', status: 'PENDING', attempt: 0 }]);
    const { run: view, project: after } = await gqlData<{ run: { checkout: unknown }; project: { workspaces: unknown[] } }>(
      url,
      'query ($id: ID!, $p: ID) { run(id: $id) { checkout { path branch worktreeEstablished } } project(id: $p) { workspaces { id } } }',
      { id: started.id, p: project.id },
    );
    expect(view.checkout).toEqual({ path: null, branch: null, worktreeEstablished: false });
    expect(after.workspaces).toEqual([]);
    const { stdout: branches } = await git('branch', '--list', 'keelson/*');
    expect(branches).toBe('');
  });

  it('rejects starts naming the field and the reason', async () => {
    const unknown = await gql(url, 'mutation { startWorkflow(name: "no-such-flow") { id } }');
    expect(unknown.errors?.[0]).toMatchObject({ extensions: { code: 'NOT_FOUND' } });
    expect(unknown.errors?.[0]?.message).toMatch(/^workflow "no-such-flow" does not exist \(known: .*project-check/);
    const project = await projectWithWorkflow(url, 'inputs', { 'gated-build.yaml': GATED });
    const missing = await gql(url, 'mutation ($p: ID) { startWorkflow(name: "gated-build", projectId: $p) { id } }', { p: project.id });
    expect(missing.errors?.[0]).toMatchObject({ message: 'inputs.topic: required by workflow gated-build', extensions: { code: 'BAD_USER_INPUT' } });
    const extra = await gql(url, 'mutation ($p: ID) { startWorkflow(name: "gated-build", projectId: $p, inputs: { topic: "x", tpoic: "y" }) { id } }', {
      p: project.id,
    });
    expect(extra.errors?.[0]?.message).toBe('inputs.tpoic: workflow gated-build declares no input "tpoic" (declared: topic)');
    const needsProject = await gql(url, 'mutation { startWorkflow(name: "project-check") { id } }');
    expect(needsProject.errors?.[0]).toMatchObject({
      message: 'projectId: workflow project-check requires a project; pass projectId',
      extensions: { code: 'BAD_USER_INPUT' },
    });
  });
});
