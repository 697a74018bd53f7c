import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startModelServer, type ModelServer } from '@keelson/model-server';
import { Client } from 'pg';
import { bearer, gqlData, subscribeResumable } from './support/client';
import { modelServerEnv, startTestMesh, type TestMesh } from './support/mesh';
import { projectWithWorkflow, respond, startWorkflow, waitForRun } from './support/runs';
import { quietTemporalRuntime } from './support/temporalServer';

quietTemporalRuntime();

/**
 * Two bash nodes that must run in parallel (a rendezvous), a prompt node that has the model call the
 * notes rib's `notes_add` tool with the plan's output, an approval gate showing the prompt node's
 * answer, and a last node.
 */
const PROMPTED = `
name: prompted-build
inputs:
  topic: { required: true }
nodes:
  - id: plan
    type: bash
    bash: |
      touch "$ARTIFACTS_DIR/plan.started"
      for i in $(seq 1200); do [ -f "$ARTIFACTS_DIR/lint.started" ] && break; sleep 0.05; done
      test -f "$ARTIFACTS_DIR/lint.started" && echo planned
  - id: lint
    type: bash
    bash: |
      touch "$ARTIFACTS_DIR/lint.started"
      for i in $(seq 1200); do [ -f "$ARTIFACTS_DIR/plan.started" ] && break; sleep 0.05; done
      test -f "$ARTIFACTS_DIR/plan.started" && echo linted
  - id: record
    type: prompt
    depends_on: [plan, lint]
    modelClass: fast
    allowed_tools: [notes_add]
    system: You keep the team's notes.
    prompt: |
      CALL_TOOL notes_add {"text": "{{inputs.topic}}: {{nodes.plan.output}} #mesh"}
  - id: gate
    type: approval
    depends_on: [record]
    prompt: "Approve? The model said: {{nodes.record.output}}"
  - id: ship
    type: bash
    depends_on: [gate]
    bash: echo shipped
`;

/**
 * Prompt nodes on the built-in coding tools: one writes a file with `Write` (the model server's
 * WRITE_FILE marker), one tries to write outside the run's cwd, one names no tools (text-only), and a
 * bash node reads what they left.
 */
const TOOLED = `
name: tooled-build
inputs:
  note: { required: true }
nodes:
  - id: write
    type: prompt
    allowed_tools: [Write]
    prompt: "WRITE_FILE notes/hello.txt {{inputs.note}}"
  - id: escape
    type: prompt
    depends_on: [write]
    allowed_tools: [Write, Read]
    prompt: 'CALL_TOOL Write {"path": "../escaped.txt", "content": "out of bounds"}'
  - id: untooled
    type: prompt
    depends_on: [write]
    prompt: 'CALL_TOOL Read {"path": "notes/hello.txt"}'
  - id: see
    type: bash
    depends_on: [escape, untooled]
    bash: 'cat notes/hello.txt; if [ -e ../escaped.txt ]; then echo escaped; else echo contained; fi'
`;

const THINKERS = {
  'slow-think.yaml': 'name: slow-think\nnodes:\n  - { id: think, type: prompt, prompt: "SLOW 30000 take your time over this answer" }\n',
  'broken-think.yaml': 'name: broken-think\nnodes:\n  - { id: think, type: prompt, prompt: "FAIL_HTTP 529 the model is overloaded" }\n',
};

interface EventView {
  cursor: string;
  type: string;
  nodeId: string | null;
  pauseId: string | null;
}

describe('a prompt node in a gated DAG, through the gateway', () => {
  let server: ModelServer;
  let mesh: TestMesh;
  let url: string;

  beforeAll(async () => {
    server = await startModelServer();
    // A 10 s heartbeat timeout: a loaded CI machine stalled a worker past 3 s once and Temporal retried
    // the `ship` node (a second NODE_STARTED). Cancels do not wait on it: workers heartbeat every second.
    mesh = await startTestMesh({ KEELSON_RUN_HEARTBEAT_TIMEOUT_MS: '10000', ...modelServerEnv(server) });
    url = mesh.gatewayUrl;
  });

  afterAll(async () => {
    await mesh?.teardown();
    await server?.stop();
  });

  it('runs bash ‖ bash → prompt (calling a rib tool) → approval → bash: pauses, refuses a stale pauseId, succeeds, streaming every transition in order', async () => {
    const project = await projectWithWorkflow(url, 'prompted', { 'prompted-build.yaml': PROMPTED });
    const events = subscribeResumable<{ runEvents: EventView }>(mesh.gatewayWsUrl, 'subscription ($after: String) { runEvents(after: $after) { cursor type nodeId pauseId } }');
    const started = await startWorkflow(url, 'prompted-build', { projectId: project.id, inputs: { topic: 'mesh' } });

    const paused = await waitForRun(url, started.id, (r) => r.status === 'PAUSED' || r.status === 'FAILED');
    const byId = Object.fromEntries(paused.nodes.map((n) => [n.id, n]));
    expect(byId.record).toMatchObject({ type: 'prompt', status: 'SUCCEEDED', attempt: 1, exitCode: null, error: null });
    const answer = byId.record!.output!;
    expect(answer).toMatch(/^DONE notes_add: Saved note [0-9a-f]+: mesh: planned #mesh \(#mesh\)$/);
    expect(paused.pendingApproval).toMatchObject({ nodeId: 'gate', prompt: `Approve? The model said: ${answer}`, artifacts: [] });
    const t = (s: string | null) => new Date(s!).getTime();
    expect(t(byId.plan!.startedAt)).toBeLessThan(t(byId.lint!.completedAt));
    expect(t(byId.lint!.startedAt)).toBeLessThan(t(byId.plan!.completedAt));

    // The model server got the turn, then the tool's result in the second call of the loop.
    const calls = server.requests().filter((r) => r.api === 'anthropic');
    expect(calls).toHaveLength(2);
    const [first, second] = calls.map((c) => c.body as { model: string; system: string; tools: { name: string }[]; messages: unknown[] });
    expect(first!.model).toBe('claude-haiku-4-5');
    expect(first!.system).toBe("You keep the team's notes.");
    expect(first!.tools.map((tool) => tool.name)).toEqual(['notes_add']);
    expect(calls[1]!.toolRounds).toBe(1);
    expect(JSON.stringify(second!.messages)).toContain(answer.replace(/^DONE notes_add: /, ''));
    // The rib tool really ran (in the worker's rib host): the note is in the notes rib's store.
    const notes = JSON.parse(await readFile(join(mesh.rawEnv.KEELSON_HOME!, 'rib-notes', 'notes.json'), 'utf8')) as { notes: { text: string; source: string }[] };
    expect(notes.notes).toEqual([expect.objectContaining({ text: 'mesh: planned #mesh', source: 'tool' })]);

    const { pauseId } = paused.pendingApproval!;
    const stale = await respond(url, started.id, 'gate', 'approve', 'not-the-current-pause');
    expect(stale).toMatchObject({ ok: false, error: `pauseId not-the-current-pause is stale: gate "gate" is open with pause ${pauseId}` });
    await expect(respond(url, started.id, 'gate', 'approve', pauseId)).resolves.toMatchObject({ ok: true, decision: 'approved', duplicate: false });
    const done = await waitForRun(url, started.id, (r) => r.status === 'SUCCEEDED');
    expect(done.nodes.map((n) => [n.id, n.status])).toEqual([
      ['plan', 'SUCCEEDED'],
      ['lint', 'SUCCEEDED'],
      ['record', 'SUCCEEDED'],
      ['gate', 'SUCCEEDED'],
      ['ship', 'SUCCEEDED'],
    ]);

    // Every transition, in order, as the log holds them.
    const { run: logged } = await gqlData<{ run: { events: { edges: { node: EventView }[] } } }>(
      url,
      'query ($id: ID!) { run(id: $id) { events(first: 100) { edges { node { cursor type nodeId pauseId } } } } }',
      { id: started.id },
    );
    const log = logged.events.edges.map((e) => e.node);
    const streamed = (await events.take(log.length, 20_000)).map((r) => r.data!.runEvents);
    await events.close();
    expect(streamed).toEqual(log);
    const seen = streamed.map((e) => (e.nodeId ? `${e.type}:${e.nodeId}` : e.type));
    const at = (s: string) => {
      expect(seen).toContain(s);
      return seen.indexOf(s);
    };
    expect(seen[0]).toBe('RUN_STARTED');
    for (const node of ['plan', 'lint']) expect(at(`NODE_SUCCEEDED:${node}`)).toBeLessThan(at('NODE_STARTED:record'));
    expect(seen.slice(at('NODE_STARTED:record'))).toEqual([
      'NODE_STARTED:record',
      'NODE_SUCCEEDED:record',
      'NODE_WAITING:gate',
      'RUN_PAUSED:gate',
      'APPROVAL_ANSWERED:gate',
      'NODE_SUCCEEDED:gate',
      'RUN_RESUMED:gate',
      'NODE_STARTED:ship',
      'NODE_SUCCEEDED:ship',
      'RUN_SUCCEEDED',
    ]);

    // One usage-ledger row for the prompt node's turn.
    const db = new Client({ connectionString: mesh.db.url });
    await db.connect();
    try {
      const { rows } = await db.query('SELECT * FROM agent_turn_usage WHERE run_id = $1', [started.id]);
      expect(rows).toEqual([
        expect.objectContaining({
          rib_id: null,
          surface: 'workflow',
          node_id: 'record',
          workflow_name: 'prompted-build',
          provider_id: 'anthropic',
          model: 'claude-haiku-4-5',
          status: 'ok',
          stop_reason: 'end',
          rounds: 2,
          tool_calls: 1,
        }),
      ]);
      expect(rows[0].input_tokens).toBeGreaterThan(0);
      expect(rows[0].output_tokens).toBeGreaterThan(0);
    } finally {
      await db.end();
    }
  });

  it('gives prompt nodes the built-in tools they name, confined to the run: a written file reaches the next bash node, an escape is denied', async () => {
    server.clear();
    const project = await projectWithWorkflow(url, 'tooled', { 'tooled-build.yaml': TOOLED });
    const started = await startWorkflow(url, 'tooled-build', { projectId: project.id, inputs: { note: 'hello from a prompt node' } });
    const done = await waitForRun(url, started.id, (r) => r.status === 'SUCCEEDED' || r.status === 'FAILED');
    const byId = Object.fromEntries(done.nodes.map((n) => [n.id, n]));
    expect(done.status).toBe('SUCCEEDED');
    expect(byId.write!.output).toBe('DONE notes/hello.txt');
    expect(await readFile(join(project.rootPath, 'notes', 'hello.txt'), 'utf8')).toBe('hello from a prompt node\n');
    // The escape was refused by the confinement policy before the tool ran, and the model was told why.
    expect(byId.escape!.output).toBe("DONE Write: denied by builtin:path_confinement: path '../escaped.txt' resolves outside the turn's allowed directories");
    // A node naming no tools is text-only: the model was offered none.
    expect(byId.untooled!.output).toBe('CALL_TOOL: no tool named Read among: no tools');
    expect(byId.see!.output).toBe('hello from a prompt node\ncontained\n');

    // What each turn was offered: the named built-ins, JSON-schema'd like any tool.
    const offered = (text: string) =>
      server
        .requests()
        .filter((r) => r.api === 'anthropic' && r.userText?.startsWith(text))
        .map((r) => (r.body as { tools?: { name: string; input_schema: { required?: string[] } }[] }).tools ?? []);
    expect(offered('WRITE_FILE')[0]!.map((t) => [t.name, t.input_schema.required])).toEqual([['Write', ['path', 'content']]]);
    expect(offered('CALL_TOOL Write')[0]!.map((t) => t.name)).toEqual(['Write', 'Read']);
    expect(offered('CALL_TOOL Read')).toEqual([[]]);

    // Each prompt node records the prompt its turn was sent.
    const { run } = await gqlData<{ run: { nodes: { id: string; prompt: string | null }[] } }>(url, 'query ($id: ID!) { run(id: $id) { nodes { id prompt } } }', { id: started.id });
    expect(run.nodes).toEqual([
      { id: 'write', prompt: 'WRITE_FILE notes/hello.txt hello from a prompt node' },
      { id: 'escape', prompt: 'CALL_TOOL Write {"path": "../escaped.txt", "content": "out of bounds"}' },
      { id: 'untooled', prompt: 'CALL_TOOL Read {"path": "notes/hello.txt"}' },
      { id: 'see', prompt: null },
    ]);
  });

  it('runs the bundled plan-implement on the built-in tools: the plan is written, the change made by the agent and committed by the gitWrite node in the worktree, an escape denied', async () => {
    server.clear();
    const outsideFile = join(mesh.dir, 'gitconfig');
    const planPath = (text: string) => /plan to (\S+\/plan\.md)/.exec(text)?.[1];
    server.setRules([
      {
        name: 'plan',
        match: { contains: 'Plan this change to the repository' },
        reply: ({ userText }) => [
          { toolCall: { name: 'Glob', arguments: { pattern: '*' } } },
          { toolCall: { name: 'Write', arguments: { path: planPath(userText)!, content: '1. Add GREETING.md saying hello.\n' } } },
          { text: 'The plan is written.' },
        ],
      },
      {
        name: 'implement',
        match: { contains: 'Implement the approved plan' },
        reply: ({ userText }) => [
          { toolCall: { name: 'Read', arguments: { path: /plan in (\S+\/plan\.md)/.exec(userText)![1]! } } },
          { toolCall: { name: 'Write', arguments: { path: 'GREETING.md', content: 'hello\n' } } },
          { toolCall: { name: 'Edit', arguments: { path: 'GREETING.md', old_string: 'hello', new_string: 'hello, mesh' } } },
          // The sandbox keeps git metadata read-only for the agent: the workflow's gitWrite node commits.
          { toolCall: { name: 'Bash', arguments: { command: 'git add GREETING.md 2>&1 | grep -o "Read-only file system" | head -1; echo "Add a greeting" > "$ARTIFACTS_DIR/commit-message.txt" && cat "$ARTIFACTS_DIR/commit-message.txt"' } } },
          { toolCall: { name: 'Bash', arguments: { command: `cat ${outsideFile}` } } },
        ],
      },
    ]);
    try {
      const project = await projectWithWorkflow(url, 'coder', {});
      const started = await startWorkflow(url, 'plan-implement', { projectId: project.id, inputs: { task: 'Greet whoever reads the repository.' } });
      const paused = await waitForRun(url, started.id, (r) => r.status === 'PAUSED' || r.status === 'FAILED');
      expect(paused.pendingApproval).toMatchObject({ nodeId: 'approve-plan', artifacts: [{ path: 'plan.md', text: '1. Add GREETING.md saying hello.\n' }] });
      await respond(url, started.id, 'approve-plan', 'approve', paused.pendingApproval!.pauseId);
      const done = await waitForRun(url, started.id, (r) => r.status === 'SUCCEEDED' || r.status === 'FAILED');
      const byId = Object.fromEntries(done.nodes.map((n) => [n.id, n]));
      expect([done.status, done.error]).toEqual(['SUCCEEDED', null]);
      expect(byId.plan!.output).toBe('The plan is written.');
      expect(byId.implement!.output).toBe(`DONE Bash: denied by builtin:path_confinement: path '${outsideFile}' resolves outside the turn's allowed directories`);
      // The commit node committed what the prompt node changed, with the message it left, on the run's branch.
      expect(byId.commit!.output).toMatch(/^[0-9a-f]+\n$/);
      expect(byId.summary!.output).toMatch(/^[0-9a-f]+ Add a greeting\n/);
      expect(byId.summary!.output).toMatch(/GREETING\.md \| 1 \+/);

      // The tool results the model got back, in order.
      const implement = server.requests().filter((r) => r.api === 'anthropic' && r.decidedBy === 'implement');
      const results = JSON.stringify(implement.at(-1)!.body);
      for (const said of ['1. Add GREETING.md saying hello.', 'Created GREETING.md (6 bytes)', 'Edited GREETING.md: replaced 1 occurrence (first at line 1)', 'Read-only file system\\nAdd a greeting']) {
        expect(results).toContain(said);
      }
      const { run } = await gqlData<{ run: { nodes: { id: string; prompt: string | null }[] } }>(url, 'query ($id: ID!) { run(id: $id) { nodes { id prompt } } }', { id: started.id });
      expect(run.nodes.find((n) => n.id === 'plan')!.prompt).toBe(
        `Plan this change to the repository in the current directory:\n\nGreet whoever reads the repository.\n\nRead what you need, then write a step-by-step plan to ${done.artifactsDir}/plan.md:\nfiles to touch, the approach, and how to verify it. Do not change any file yet.\n`,
      );
    } finally {
      server.setRules([]);
    }
  });

  it("acts as the run's starter in the swarm rib's operator tools: an operator's run cannot stop the bus (admin only), an admin's can", async () => {
    const project = await projectWithWorkflow(url, 'bus-op', {
      'bus-op.yaml': 'name: bus-op\nnodes:\n  - id: stop\n    type: prompt\n    modelClass: fast\n    allowed_tools: [chat_server_stop]\n    prompt: CALL_TOOL chat_server_stop {}\n',
    });
    const { createApiToken } = await gqlData<{ createApiToken: { token: string } }>(url, 'mutation { createApiToken(name: "run-operator", scopes: ["operate"]) { token } }');
    const START = 'mutation ($p: ID) { startWorkflow(name: "bus-op", projectId: $p) { id } }';
    const asOperator = await gqlData<{ startWorkflow: { id: string } }>(url, START, { p: project.id }, { auth: bearer(createApiToken.token) });
    const asAdmin = await gqlData<{ startWorkflow: { id: string } }>(url, START, { p: project.id });
    const output = async (id: string) => (await waitForRun(url, id, (r) => r.status === 'SUCCEEDED' || r.status === 'FAILED', 60_000)).nodes.find((n) => n.id === 'stop')!.output!;
    // Before, the tools called the swarms service as an all-scope service, whoever drove the turn.
    expect(await output(asOperator.startWorkflow.id)).toMatch(/chat_server_stop: .*Mutation\.stopSwarmServer needs scope admin; the caller \(token:run-operator\) has read, operate/);
    expect(await output(asAdmin.startWorkflow.id)).not.toMatch(/needs scope/);
  });

  it('cancelRun stops a streaming prompt node within the heartbeat, and a provider error fails its node naming the cause', async () => {
    const project = await projectWithWorkflow(url, 'thinkers', THINKERS);
    const slow = await startWorkflow(url, 'slow-think', { projectId: project.id });
    await waitForRun(url, slow.id, (r) => r.nodes[0]!.status === 'RUNNING');
    await new Promise((r) => setTimeout(r, 300));
    const cancelledAt = Date.now();
    await gqlData(url, 'mutation ($id: ID!) { cancelRun(runId: $id) { ok } }', { id: slow.id });
    const cancelled = await waitForRun(url, slow.id, (r) => r.status === 'CANCELLED', 20_000);
    // The answer would stream for 30 s: the node stops at its next heartbeat (sent every second,
    // temporal/src/heartbeatThrottle.ts), long before that. 12 s leaves room for a loaded machine
    // (a CI run on a slow two-core box took 7.1 s) and is still well short of the stream's end.
    expect(Date.now() - cancelledAt).toBeLessThan(12_000);
    expect(cancelled.nodes[0]).toMatchObject({ id: 'think', status: 'CANCELLED' });

    const broken = await startWorkflow(url, 'broken-think', { projectId: project.id });
    const failed = await waitForRun(url, broken.id, (r) => r.status === 'FAILED');
    expect(failed.error).toBe('node "think" failed: prompt node "think" failed: provider anthropic answered HTTP 529: the model is overloaded');
  });
});
