import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import { type RespondInput } from '@keelson/schema';
import { parse } from 'yaml';
import { quietTemporalRuntime } from '../../test/support/temporalServer';
import { definitionOf, registerRun } from '../../test/support/registerRun';
import { RunHarness, type StartedRun } from '../test/runHarness';
import { createActivities, type PromptNodeRequest } from './activities';
import { respondUpdate, runStatusQuery } from './workflows/messages';

quietTemporalRuntime();

const ONE_GATE = `
name: one-gate
nodes:
  - { id: work, type: bash, bash: "echo work" }
  - { id: gate, type: approval, depends_on: [work], prompt: "Ship it?" }
  - { id: done, type: bash, depends_on: [gate], bash: "echo done" }
`;

/** The reason an Update was rejected with (the validator's or the handler's message). */
async function rejection(update: Promise<unknown>): Promise<string> {
  try {
    await update;
  } catch (err) {
    expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
    return ((err as WorkflowUpdateFailedError).cause as Error).message;
  }
  throw new Error('the update was accepted');
}

function answer(run: StartedRun, input: RespondInput) {
  return run.handle.executeUpdate(respondUpdate, { args: [input] });
}

describe('dagRun on a real worker and dev server', () => {
  let h: RunHarness;
  const prompts: PromptNodeRequest[] = [];

  beforeAll(async () => {
    h = await RunHarness.start();
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('rejects a stale pauseId, a closed or unknown gate and text over 16 KiB in the Update validator, recording nothing', async () => {
    const run = await h.start(ONE_GATE);
    const pause = await h.openPause(run.runId, 'gate');
    const status = await run.handle.query(runStatusQuery);
    expect(status).toMatchObject({ launch: 1, openGates: [{ nodeId: 'gate', pauseId: pause.pause_id }], closing: false });
    expect(status.nodes).toEqual({ work: 'SUCCEEDED', gate: 'WAITING', done: 'PENDING' });

    await expect(rejection(answer(run, { nodeId: 'gate', text: 'approve', pauseId: 'old-pause' }))).resolves.toBe(
      `pauseId old-pause is stale: gate "gate" is open with pause ${pause.pause_id}`,
    );
    await expect(rejection(answer(run, { nodeId: 'done', text: 'approve' }))).resolves.toBe('gate "done" is not open: "done" is a bash node, not an approval');
    await expect(rejection(answer(run, { nodeId: 'nope', text: 'approve' }))).resolves.toBe('gate "nope" is not open: the run has no node "nope"');
    await expect(rejection(answer(run, { nodeId: 'gate', text: 'é'.repeat(8193) }))).resolves.toBe('text: must be at most 16384 bytes, got 16386');
    await expect(rejection(answer(run, { nodeId: 'gate', text: '  ' }))).resolves.toBe('text: must not be empty (answer "approve" or give feedback)');
    expect((await h.pauses(run.runId)).map((p) => p.decision)).toEqual([null]);

    await expect(answer(run, { nodeId: 'gate', text: 'approve', pauseId: pause.pause_id })).resolves.toEqual({
      ok: true,
      pauseId: pause.pause_id,
      decision: 'approved',
      duplicate: false,
    });
    // Repeating the recorded answer is idempotent; a different one for the same pause is not.
    await expect(answer(run, { nodeId: 'gate', text: 'approve', pauseId: pause.pause_id })).resolves.toMatchObject({ ok: true, duplicate: true });
    await expect(rejection(answer(run, { nodeId: 'gate', text: 'no', pauseId: pause.pause_id }))).resolves.toBe(
      `pause ${pause.pause_id} of gate "gate" was already answered; one decision is recorded per pause`,
    );
    await expect(run.handle.result()).resolves.toMatchObject({ status: 'SUCCEEDED', continuations: 0 });
    expect((await h.events(run.runId)).filter((e) => e.startsWith('APPROVAL_ANSWERED'))).toHaveLength(1);
    expect(await h.pauses(run.runId)).toMatchObject([{ decision: 'approve', closed_by: 'answer', prompt: 'Ship it?' }]);
  });

  it('records exactly one decision when two different answers race', async () => {
    const run = await h.start(ONE_GATE);
    const { pause_id: pauseId } = await h.openPause(run.runId, 'gate');
    const outcomes = await Promise.allSettled([
      answer(run, { nodeId: 'gate', text: 'approve', pauseId }),
      answer(run, { nodeId: 'gate', text: 'redo the plan', pauseId }),
    ]);
    const won = outcomes.filter((o) => o.status === 'fulfilled');
    const lost = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(((lost[0]!.reason as WorkflowUpdateFailedError).cause as Error).message).toMatch(/already (has an answer|answered); one decision is recorded per pause/);
    const winner = outcomes[0]!.status === 'fulfilled' ? 'approve' : 'redo the plan';
    expect((await h.pauses(run.runId)).map((p) => p.decision)).toEqual([winner]);
    await run.handle.result().catch(() => undefined);
    expect((await h.status(run.runId)).status).toBe(winner === 'approve' ? 'SUCCEEDED' : 'FAILED');
    expect((await h.events(run.runId)).filter((e) => e.startsWith('APPROVAL_ANSWERED'))).toHaveLength(1);
  });

  it('answers two identical racing answers once, the second as a duplicate', async () => {
    const run = await h.start(ONE_GATE);
    const { pause_id: pauseId } = await h.openPause(run.runId, 'gate');
    const results = await Promise.all([answer(run, { nodeId: 'gate', text: 'approve', pauseId }), answer(run, { nodeId: 'gate', text: 'approve', pauseId })]);
    expect(results.map((r) => r.duplicate).sort()).toEqual([false, true]);
    await expect(run.handle.result()).resolves.toMatchObject({ status: 'SUCCEEDED' });
    expect((await h.events(run.runId)).filter((e) => e.startsWith('APPROVAL_ANSWERED'))).toHaveLength(1);
  });

  it('keeps answer and cancel consistent when they race: an accepted answer is recorded, a rejected one leaves the gate closed by the cancel', async () => {
    const seen: string[] = [];
    for (let i = 0; i < 6; i++) {
      const run = await h.start(ONE_GATE);
      const { pause_id: pauseId } = await h.openPause(run.runId, 'gate');
      // Alternate which message leaves first; Temporal decides which the workflow sees first.
      const sendAnswer = () => answer(run, { nodeId: 'gate', text: 'approve', pauseId });
      const [answered] =
        i % 2 === 0
          ? await Promise.allSettled([sendAnswer(), run.handle.cancel()])
          : await Promise.all([run.handle.cancel(), Promise.allSettled([sendAnswer()])]).then(([, [a]]) => [a!]);
      await expect(run.handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
      expect((await h.status(run.runId)).status).toBe('CANCELLED');
      const [pause] = await h.pauses(run.runId);
      if (answered.status === 'fulfilled') {
        expect(pause).toMatchObject({ decision: 'approve', closed_by: 'answer' });
        seen.push('answer first');
      } else {
        expect(((answered.reason as WorkflowUpdateFailedError).cause as Error).message).toBe(`run ${run.runId} is being cancelled; its gates are closed`);
        expect(pause).toMatchObject({ decision: null, closed_by: 'cancelled' });
        seen.push('cancel first');
      }
    }
    console.log(`answer racing cancel, 6 tries: ${seen.join(', ')}`);
  });

  it('answer vs cancel, each order made certain: an answer recorded first stands; a cancel seen first refuses the answer', async () => {
    // A sleeping branch keeps the cancelling run open (its command must be killed) while the answer arrives.
    const busy = `
name: busy-gate
nodes:
  - { id: gate, type: approval, prompt: "Go?" }
  - { id: nap, type: bash, bash: "sleep 600" }
`;
    const cancelFirst = await h.start(busy);
    const first = await h.openPause(cancelFirst.runId, 'gate');
    await cancelFirst.handle.cancel();
    const deadline = Date.now() + 10_000;
    while (!(await cancelFirst.handle.query(runStatusQuery)).closing && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await expect(rejection(answer(cancelFirst, { nodeId: 'gate', text: 'approve', pauseId: first.pause_id }))).resolves.toBe(
      `run ${cancelFirst.runId} is being cancelled; its gates are closed`,
    );
    await expect(cancelFirst.handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    expect(await h.pauses(cancelFirst.runId)).toMatchObject([{ decision: null, closed_by: 'cancelled' }]);
    expect((await h.nodes(cancelFirst.runId)).map((n) => [n.node_id, n.status])).toEqual([
      ['gate', 'CANCELLED'],
      ['nap', 'CANCELLED'],
    ]);

    const answerFirst = await h.start(busy);
    const second = await h.openPause(answerFirst.runId, 'gate');
    await expect(answer(answerFirst, { nodeId: 'gate', text: 'approve', pauseId: second.pause_id })).resolves.toMatchObject({ ok: true });
    await answerFirst.handle.cancel();
    await expect(answerFirst.handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    expect(await h.status(answerFirst.runId)).toMatchObject({ status: 'CANCELLED' });
    expect(await h.pauses(answerFirst.runId)).toMatchObject([{ decision: 'approve', closed_by: 'answer' }]);
    expect((await h.nodes(answerFirst.runId)).map((n) => [n.node_id, n.status])).toEqual([
      ['gate', 'SUCCEEDED'],
      ['nap', 'CANCELLED'],
    ]);
  });

  it('continues as new near its history limit without losing state: no node runs twice and an open gate keeps its pause id', async () => {
    const chain = `
name: long-chain
nodes:
  - { id: a, type: bash, bash: "echo a >> \\"$ARTIFACTS_DIR/effects\\"" }
  - { id: gate, type: approval, depends_on: [a], prompt: "continue?" }
  - { id: p1, type: bash, depends_on: [a], bash: "echo p1 >> \\"$ARTIFACTS_DIR/effects\\"" }
  - { id: p2, type: bash, depends_on: [p1], bash: "echo p2 >> \\"$ARTIFACTS_DIR/effects\\"" }
  - { id: p3, type: bash, depends_on: [p2], bash: "echo p3 >> \\"$ARTIFACTS_DIR/effects\\"" }
  - { id: p4, type: bash, depends_on: [p3], bash: "echo p4 >> \\"$ARTIFACTS_DIR/effects\\"" }
  - { id: z, type: bash, depends_on: [gate, p4], bash: "echo z >> \\"$ARTIFACTS_DIR/effects\\"" }
`;
    const run = await h.start(chain, { maxHistoryEvents: 25 });
    const { pause_id: pauseId } = await h.openPause(run.runId, 'gate');
    // Let the parallel branch finish (several hand-overs happen meanwhile), then answer with the old pause id.
    const deadline = Date.now() + 30_000;
    while ((await h.nodes(run.runId)).find((n) => n.node_id === 'p4')!.status !== 'SUCCEEDED' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await expect(answer(run, { nodeId: 'gate', text: 'approve', pauseId })).resolves.toMatchObject({ ok: true, pauseId, duplicate: false });
    const result = await run.handle.result();
    expect(result.status).toBe('SUCCEEDED');
    expect(result.continuations).toBeGreaterThanOrEqual(2);
    expect((await readFile(join(run.artifactsDir, 'effects'), 'utf8')).split('\n').filter(Boolean).sort()).toEqual(['a', 'p1', 'p2', 'p3', 'p4', 'z']);
    expect((await h.nodes(run.runId)).map((n) => [n.node_id, n.status, n.attempt])).toEqual([
      ['a', 'SUCCEEDED', 1],
      ['gate', 'SUCCEEDED', 1],
      ['p1', 'SUCCEEDED', 1],
      ['p2', 'SUCCEEDED', 1],
      ['p3', 'SUCCEEDED', 1],
      ['p4', 'SUCCEEDED', 1],
      ['z', 'SUCCEEDED', 1],
    ]);
    const events = await h.events(run.runId);
    expect(events.filter((e) => e === 'RUN_STARTED')).toHaveLength(1);
    expect(events.filter((e) => e === 'NODE_WAITING:gate')).toHaveLength(1);
    expect(await h.pauses(run.runId)).toHaveLength(1);
    // At least one hand-over happened while the gate was open, carrying its pause id.
    const carriedGates: string[] = [];
    for await (const execution of h.client.workflow.list({ query: `WorkflowId = '${run.handle.workflowId}'` })) {
      const history = await h.client.workflow.getHandle(run.handle.workflowId, execution.runId).fetchHistory();
      for (const event of history.events ?? []) {
        const payload = event.workflowExecutionContinuedAsNewEventAttributes?.input?.payloads?.[0]?.data;
        if (!payload) continue;
        const input = JSON.parse(Buffer.from(payload).toString('utf8')) as { carried: { gates: { pauseId: string }[] } };
        carriedGates.push(...input.carried.gates.map((g) => g.pauseId));
      }
    }
    expect(carriedGates).toContain(pauseId);
    console.log(`continue-as-new: ${result.continuations} hand-overs at 25 history events, ${carriedGates.length} of them with the gate open`);
  });

  it('stops at a cancel node whose condition holds, and skips nodes whose condition does not (and their dependents)', async () => {
    const gatekeeper = `
name: gatekeeper
nodes:
  - { id: gate, type: approval, prompt: "Go?", on_feedback: continue }
  - { id: stop, type: cancel, depends_on: [gate], when: { node: gate, equals: reject }, reason: "rejected: {{nodes.gate.output}}" }
  - { id: after-stop, type: bash, depends_on: [stop], bash: "echo never" }
  - { id: go, type: bash, depends_on: [gate], when: { node: gate, notEquals: reject }, bash: "echo go" }
`;
    const rejected = await h.start(gatekeeper);
    await answer(rejected, { nodeId: 'gate', text: 'reject', pauseId: (await h.openPause(rejected.runId, 'gate')).pause_id });
    await expect(rejected.handle.result()).resolves.toMatchObject({ status: 'CANCELLED', error: 'cancelled by node "stop": rejected: reject' });
    expect(await h.status(rejected.runId)).toMatchObject({ status: 'CANCELLED', error: 'cancelled by node "stop": rejected: reject' });
    expect((await h.nodes(rejected.runId)).map((n) => [n.node_id, n.status])).toEqual([
      ['gate', 'SUCCEEDED'],
      ['stop', 'SUCCEEDED'],
      ['after-stop', 'PENDING'],
      ['go', 'PENDING'],
    ]);

    const approved = await h.start(gatekeeper);
    await answer(approved, { nodeId: 'gate', text: 'approve', pauseId: (await h.openPause(approved.runId, 'gate')).pause_id });
    await expect(approved.handle.result()).resolves.toMatchObject({ status: 'SUCCEEDED' });
    expect((await h.nodes(approved.runId)).map((n) => [n.node_id, n.status])).toEqual([
      ['gate', 'SUCCEEDED'],
      ['stop', 'SKIPPED'],
      ['after-stop', 'SKIPPED'],
      ['go', 'SUCCEEDED'],
    ]);
  });

  it('fails a gate answered with feedback unless the node continues on feedback', async () => {
    const run = await h.start(ONE_GATE);
    await answer(run, { nodeId: 'gate', text: 'the plan misses the migration', pauseId: (await h.openPause(run.runId, 'gate')).pause_id });
    await expect(run.handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    expect(await h.status(run.runId)).toMatchObject({
      status: 'FAILED',
      error: 'node "gate" failed: the gate was answered with feedback: the plan misses the migration',
    });
    expect((await h.nodes(run.runId)).map((n) => [n.node_id, n.status])).toEqual([
      ['work', 'SUCCEEDED'],
      ['gate', 'FAILED'],
      ['done', 'PENDING'],
    ]);
  });

  it('retries a failing command as its retries allow, keeps the last output, then fails the run naming the node', async () => {
    const run = await h.start(`
name: flaky
nodes:
  - { id: flaky, type: bash, retries: 1, bash: "echo attempt $KEELSON_ATTEMPT; exit 3" }
  - { id: never, type: bash, depends_on: [flaky], bash: "echo never" }
`);
    await expect(run.handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    expect(await h.status(run.runId)).toMatchObject({ status: 'FAILED', error: 'node "flaky" failed: bash node "flaky" exited with code 3: attempt 2' });
    expect(await h.nodes(run.runId)).toMatchObject([
      { node_id: 'flaky', status: 'FAILED', attempt: 2, exit_code: 3, output: 'attempt 2\n' },
      { node_id: 'never', status: 'PENDING' },
    ]);
    expect(await h.events(run.runId)).toEqual([
      'RUN_STARTED',
      'NODE_STARTED:flaky',
      'NODE_ATTEMPT_FAILED:flaky',
      'NODE_STARTED:flaky',
      'NODE_ATTEMPT_FAILED:flaky',
      'NODE_FAILED:flaky',
      'RUN_FAILED',
    ]);
  });

  it('kills a command at its own timeout and keeps only the tail of a large output', async () => {
    const run = await h.start(`
name: limits
nodes:
  - { id: big, type: bash, bash: "head -c 100000 /dev/zero | tr '\\\\0' x; echo; echo tail-marker" }
  - { id: slow, type: bash, timeout: 1s, bash: "echo started; sleep 30" }
`);
    await expect(run.handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    const [big, slow] = await h.nodes(run.runId);
    expect(big).toMatchObject({ status: 'SUCCEEDED', output_truncated: true, output_bytes: '100013' });
    expect(Buffer.byteLength(big!.output!)).toBe(64 * 1024);
    expect(big!.output!.endsWith('x\ntail-marker\n')).toBe(true);
    expect(slow).toMatchObject({ status: 'FAILED', error: 'bash node "slow" timed out after 1s: started' });
  });

  it('fails a prompt node CAPABILITY_UNSUPPORTED while no provider is registered', async () => {
    const run = await h.start(`
name: thinker
nodes:
  - { id: think, type: prompt, prompt: "Say hi" }
`);
    const failure = await run.handle.result().then(
      () => undefined,
      (err: WorkflowFailedError) => err.cause as { type?: string; message: string },
    );
    expect(failure).toMatchObject({ type: 'CAPABILITY_UNSUPPORTED' });
    expect(await h.status(run.runId)).toMatchObject({
      status: 'FAILED',
      error: 'node "think" failed: prompt node "think": no model provider is registered on this worker yet',
    });
    void prompts;
  });

  it('does not run a node again when its activity is retried after it completed (the side effect happens once)', async () => {
    const definition = definitionOf(parse('name: once\nnodes:\n  - { id: effect, type: bash, bash: "echo done >> \\"$ARTIFACTS_DIR/effects\\"; echo $KEELSON_ATTEMPT" }\n'));
    const runId = randomUUID();
    const artifactsDir = join(h.home, 'runs', runId, 'artifacts');
    await registerRun(h.store, definition, { id: runId, cwd: h.home, artifactsDir });
    const { beginLaunch, runCommandNode } = createActivities(h.opened.deps);
    await new MockActivityEnvironment().run(beginLaunch, { runId, launch: 1 });
    const ref = { runId, nodeId: 'effect', launch: 1 };
    await expect(new MockActivityEnvironment({ attempt: 1 }).run(runCommandNode, ref)).resolves.toEqual({
      status: 'SUCCEEDED',
      value: '1',
      exitCode: 0,
      alreadyCompleted: false,
    });
    // Attempt 2: what Temporal sends when the worker died between the commit and its reply.
    await expect(new MockActivityEnvironment({ attempt: 2 }).run(runCommandNode, ref)).resolves.toEqual({
      status: 'SUCCEEDED',
      value: '1',
      exitCode: 0,
      alreadyCompleted: true,
    });
    expect(await readFile(join(artifactsDir, 'effects'), 'utf8')).toBe('done\n');
    expect(await h.events(runId)).toEqual(['RUN_STARTED', 'NODE_STARTED:effect', 'NODE_SUCCEEDED:effect']);
  });
});

describe('dagRun with a prompt executor', () => {
  let h: RunHarness;
  const requests: PromptNodeRequest[] = [];

  beforeAll(async () => {
    h = await RunHarness.start({
      promptExecutor: async (req) => {
        requests.push(req);
        req.heartbeat();
        return { text: `answer to: ${req.prompt}`, stopReason: 'end', model: 'scripted' };
      },
    });
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('hands the executor the rendered turn: inputs, upstream output, $ARTIFACTS_DIR, tools and the model class', async () => {
    const run = await h.start(
      `
name: thinker
modelClass: balanced
inputs:
  topic: { required: true }
nodes:
  - { id: facts, type: bash, bash: "echo forty-two" }
  - id: think
    type: prompt
    depends_on: [facts]
    allowed_tools: [demo_ping]
    reasoningEffort: low
    prompt: "About {{inputs.topic}}: {{nodes.facts.output}}. Write to $ARTIFACTS_DIR/out.md"
  - { id: quiet, type: prompt, depends_on: [think], modelClass: fast, prompt: "Summarize {{nodes.think.output}}" }
`,
      { inputs: { topic: 'life' } },
    );
    await expect(run.handle.result()).resolves.toMatchObject({ status: 'SUCCEEDED' });
    expect(requests).toHaveLength(2);
    expect(requests[0]).toMatchObject({
      nodeId: 'think',
      workflowName: 'thinker',
      prompt: `About life: forty-two. Write to ${run.artifactsDir}/out.md`,
      allowedTools: ['demo_ping'],
      modelClass: 'balanced',
      reasoningEffort: 'low',
      cwd: h.home,
      inputs: { topic: 'life' },
    });
    expect(requests[1]).toMatchObject({ nodeId: 'quiet', allowedTools: [], modelClass: 'fast', prompt: `Summarize answer to: ${requests[0]!.prompt}` });
    expect((await h.nodes(run.runId)).find((n) => n.node_id === 'think')!.output).toBe(`answer to: ${requests[0]!.prompt}`);
  });
});
