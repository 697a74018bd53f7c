import { startModelServer, type ModelServer } from '@keelson/model-server';
import { POLICY_APPROVAL_NODE, POLICY_APPROVAL_WORKFLOW } from '@keelson/schema';
import { silentLogger } from '@keelson/service';
import type { Rib, ToolDefinition } from '@keelson/ribs-contract';
import { loadWorkerServiceConfig, startWorkerService } from '@keelson/stack';
import type { RunningStandaloneWorker } from '@keelson/temporal';
import { z } from 'zod';
import { gqlData } from './support/client';
import { modelServerEnv, startTestMesh, type TestMesh } from './support/mesh';
import { getRun, projectWithWorkflow, respond, startWorkflow, waitForRun, type RunView } from './support/runs';
import { quietTemporalRuntime } from './support/temporalServer';
import { until } from './support/until';

quietTemporalRuntime();

/** Every label `stamp_mark` really stamped, in the order it ran (the worker's rib host runs in this process). */
const stamped: string[] = [];

const markTool: ToolDefinition<{ label: string }> = {
  name: 'stamp_mark',
  description: 'Stamp a label.',
  inputSchema: z.strictObject({ label: z.string().min(1) }),
  state_changing: true,
  execute(input, ctx) {
    stamped.push(input.label);
    ctx.emit({ type: 'tool_result', toolUseId: '', content: `stamped ${input.label}` });
  },
};

/** A rib whose own policy asks the operator before its tool runs, on any surface. */
const stampRib: Rib = {
  id: 'stamp',
  displayName: 'Stamp',
  registerTools: () => [markTool as ToolDefinition],
  contributePolicies: () => [
    {
      id: 'ask-before-stamp',
      on: [{ phase: 'tool_call', tool: 'stamp_mark' }],
      evaluate: () => ({ outcome: 'ask', reason: 'stamping needs a human' }),
    },
  ],
};

/** A prompt node that has the model call `stamp_mark` with the run's label, then a last step. */
const stampWorkflow = (name: string) => `
name: ${name}
inputs:
  label: { required: true }
nodes:
  - id: mark
    type: prompt
    allowed_tools: [stamp_mark]
    prompt: 'CALL_TOOL stamp_mark {"label": "{{inputs.label}}"}'
  - id: after
    type: bash
    depends_on: [mark]
    bash: echo after
`;

interface ApprovalRun {
  id: string;
  status: string;
  pendingApproval: { nodeId: string; pauseId: string; prompt: string } | null;
}

/**
 * The paused `policy-approval` run whose question names `workflow`, as the operator finds it through
 * the gateway; undefined if the run `runId` settles first (an ask that never reached the operator).
 */
async function pausedApprovalFor(url: string, workflow: string, runId: string): Promise<ApprovalRun | undefined> {
  const mine = (all: ApprovalRun[]) => all.find((r) => r.status === 'PAUSED' && r.pendingApproval?.prompt.includes(`workflow '${workflow}'`));
  const seen = await until(
    `the approval run of ${workflow}`,
    async () => ({
      approvals: (
        await gqlData<{ runs: { edges: { node: ApprovalRun }[] } }>(
          url,
          `{ runs(workflowName: "${POLICY_APPROVAL_WORKFLOW}", first: 20) { edges { node { id status pendingApproval { nodeId pauseId prompt } } } } }`,
        )
      ).runs.edges.map((e) => e.node),
      run: await getRun(url, runId),
    }),
    ({ approvals, run }) => mine(approvals) !== undefined || run.status === 'SUCCEEDED' || run.status === 'FAILED',
    30_000,
  );
  return mine(seen.approvals);
}

/**
 * Starts `workflow` with `label`, waits for the policy's approval run, checks its question and that
 * the tool has not run yet, answers it with `answer`, and returns the settled run.
 */
async function askedThenAnswered(url: string, projectId: string, workflow: string, label: string, answer: string): Promise<RunView> {
  const started = await startWorkflow(url, workflow, { projectId, inputs: { label } });
  const approval = await pausedApprovalFor(url, workflow, started.id);
  if (!approval) throw new Error(`no approval was asked; the run settled: ${JSON.stringify((await getRun(url, started.id)).nodes)}`);
  expect(approval.pendingApproval).toMatchObject({
    nodeId: POLICY_APPROVAL_NODE,
    prompt: expect.stringMatching(
      new RegExp(`^Policy stamp:ask-before-stamp asks before a caller uses tool 'stamp_mark' \\(surface workflow, workflow '${workflow}', node 'mark', provider 'anthropic'\\)\\.\\nReason: stamping needs a human\\n`),
    ),
  });
  // The question never carries the call's arguments; the prompt node waits on it, the tool unrun.
  expect(approval.pendingApproval!.prompt).not.toContain(label);
  expect(stamped).not.toContain(label);
  expect((await getRun(url, started.id)).nodes.find((n) => n.id === 'mark')!.status).toBe('RUNNING');

  await expect(respond(url, approval.id, POLICY_APPROVAL_NODE, answer, approval.pendingApproval!.pauseId)).resolves.toMatchObject({ ok: true });
  await waitForRun(url, approval.id, (r) => r.status === (answer === 'approve' ? 'SUCCEEDED' : 'FAILED'));
  return waitForRun(url, started.id, (r) => r.status === 'SUCCEEDED' || r.status === 'FAILED');
}

describe("a policy ask about a prompt node's tool, on the in-process worker", () => {
  let server: ModelServer;
  let mesh: TestMesh;
  let project: { id: string };

  beforeAll(async () => {
    server = await startModelServer();
    mesh = await startTestMesh({ ...modelServerEnv(server) }, { ribHost: { available: { stamp: stampRib } } });
    project = await projectWithWorkflow(mesh.gatewayUrl, 'stamps', { 'stamp-yes.yaml': stampWorkflow('stamp-yes'), 'stamp-no.yaml': stampWorkflow('stamp-no') });
  });

  afterAll(async () => {
    await mesh?.teardown();
    await server?.stop();
  });

  it('opens a policy-approval gate naming the tool; approving it runs the tool and the prompt node succeeds', async () => {
    const done = await askedThenAnswered(mesh.gatewayUrl, project.id, 'stamp-yes', 'label-approved', 'approve');
    expect(done.status).toBe('SUCCEEDED');
    expect(done.nodes.map((n) => [n.id, n.status, n.output])).toEqual([
      ['mark', 'SUCCEEDED', 'DONE stamp_mark: stamped label-approved'],
      ['after', 'SUCCEEDED', 'after\n'],
    ]);
    expect(stamped).toEqual(['label-approved']);
  });

  it('rejecting the gate denies the call: the tool does not run and the turn gets the denial', async () => {
    const calls = server.requests().length;
    const done = await askedThenAnswered(mesh.gatewayUrl, project.id, 'stamp-no', 'label-rejected', 'no, not this one');
    expect(done.status).toBe('SUCCEEDED');
    const mark = done.nodes.find((n) => n.id === 'mark')!;
    expect(mark.output).toBe('DONE stamp_mark: denied by stamp:ask-before-stamp: stamping needs a human (not approved)');
    expect(stamped).toEqual(['label-approved']);
    // The model's second call of the turn carried the denial as the tool's error result.
    const second = server.requests().slice(calls).filter((r) => r.api === 'anthropic')[1]!;
    expect(JSON.stringify(second.body)).toContain('denied by stamp:ask-before-stamp: stamping needs a human (not approved)');
  });
});

describe("a policy ask about a prompt node's tool, on the production worker service (apps/worker/main.ts)", () => {
  let server: ModelServer;
  let mesh: TestMesh;
  let worker: RunningStandaloneWorker | undefined;

  beforeAll(async () => {
    server = await startModelServer();
    mesh = await startTestMesh({ KEELSON_RUN_HEARTBEAT_TIMEOUT_MS: '3000', ...modelServerEnv(server) }, { worker: false });
    const config = loadWorkerServiceConfig({ ...mesh.rawEnv, TEMPORAL_ADDRESS: mesh.temporal.address, KEELSON_PROJECTS_URL: mesh.projects.url, KEELSON_MEMORY_URL: mesh.memory.url });
    worker = await startWorkerService({ ...config, log: silentLogger(), ribHost: { available: { stamp: stampRib } } });
  });

  afterAll(async () => {
    await worker?.stop();
    await mesh?.teardown();
    await server?.stop();
  });

  it('reaches the operator through the runs domain it opens: the answered gate lets the tool run', async () => {
    const project = await projectWithWorkflow(mesh.gatewayUrl, 'stamps-apart', { 'stamp-apart.yaml': stampWorkflow('stamp-apart') });
    const done = await askedThenAnswered(mesh.gatewayUrl, project.id, 'stamp-apart', 'label-apart', 'approve');
    expect(done.status).toBe('SUCCEEDED');
    expect(done.nodes.find((n) => n.id === 'mark')!.output).toBe('DONE stamp_mark: stamped label-apart');
    expect(stamped).toContain('label-apart');
  });
});
