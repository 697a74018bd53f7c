import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { MeshError, planOf, runMessages, type WorkflowNode } from '@keelson/schema';
import { whenValue, type RunRecord, type RunStore } from '@keelson/runs';
import { asActivity } from '../failures';
import { workflowSteerReader } from '../steerReader';
import type { NodeOutcome, NodeRef, PromptNodeRequest, PromptNodeResult } from './runActivities';
import { runNodeOf, type RunActivityContext } from './runContext';
import { referencedNodes, renderText, withArtifactsDir } from './templates';

/** A prompt node of a run definition. */
type PromptNode = Extract<WorkflowNode, { type: 'prompt' }>;

/** The `runPromptNode` activity of the `dagRun` workflow, over the shared run context. */
export function runPromptNodeActivity(c: RunActivityContext) {
  const { need, loadRun } = c;
  return {
    /**
     * Runs a prompt node through the registered executor (its rendered prompt recorded on the node
     * first); without one, CAPABILITY_UNSUPPORTED.
     */
    async runPromptNode(input: NodeRef): Promise<NodeOutcome> {
      return asActivity(async () => {
        const { store, promptExecutor } = need();
        const ctx = Context.current();
        const run = await loadRun(input.runId);
        const node = runNodeOf(run, input.nodeId);
        if (node.type !== 'prompt') throw new MeshError('BAD_USER_INPUT', `node ${node.id} is a ${node.type} node, not a prompt`);
        const started = await store.startAttempt(run.id, node.id, input.launch, ctx.info.attempt);
        if (started.completed) return { status: 'SUCCEEDED', value: whenValue(started.completed.output), alreadyCompleted: true };
        const unsupported = `prompt node "${node.id}": no model provider is registered on this worker yet`;
        if (!promptExecutor) {
          await store.attemptFailed(run.id, node.id, input.launch, ctx.info.attempt, { output: '', outputBytes: 0, truncated: false, exitCode: null, error: unsupported });
          throw new MeshError('CAPABILITY_UNSUPPORTED', unsupported);
        }
        const outputs = await store.outputsOf(run.id, referencedNodes(node.prompt));
        const values = { inputs: run.inputs, outputs };
        const prompt = withArtifactsDir(renderText(node.prompt, values), run.artifactsDir);
        await store.recordPrompt(run.id, node.id, input.launch, ctx.info.attempt, prompt);
        const heartbeat = setInterval(() => ctx.heartbeat(), 1000);
        let result: PromptNodeResult;
        try {
          result = await promptExecutor(promptRequest(ctx, run, node, prompt, values));
        } finally {
          clearInterval(heartbeat);
        }
        return settlePromptResult(store, ctx, run, node, input.launch, result);
      });
    },
  };
}

/** What the executor receives for the node's turn: the rendered prompt and system, the node's model choices, the run's place. */
function promptRequest(ctx: Context, run: RunRecord, node: PromptNode, prompt: string, values: Parameters<typeof renderText>[1]): PromptNodeRequest {
  return {
    runId: run.id,
    nodeId: node.id,
    workflowName: run.workflowName,
    ribId: run.ribId,
    prompt,
    ...(node.system ? { system: withArtifactsDir(renderText(node.system, values), run.artifactsDir) } : {}),
    allowedTools: node.allowed_tools ?? [],
    model: node.model ?? run.definition.model,
    modelClass: node.modelClass ?? run.definition.modelClass,
    reasoningEffort: node.reasoningEffort ?? run.definition.reasoningEffort,
    cwd: run.cwd,
    artifactsDir: run.artifactsDir,
    inputs: run.inputs,
    caller: run.startedBy,
    timeoutMs: planOf(run.definition).find((n) => n.id === node.id)!.timeoutMs,
    signal: ctx.cancellationSignal,
    heartbeat: () => ctx.heartbeat(),
    steer: workflowSteerReader(runMessages.nodeSteerNotes, node.id),
  };
}

/** What the turn's end makes of the attempt: cancelled, failed (retried while `retries` allow), or the node completed. */
async function settlePromptResult(store: RunStore, ctx: Context, run: RunRecord, node: PromptNode, launch: number, result: PromptNodeResult): Promise<NodeOutcome> {
  if (ctx.cancellationSignal.aborted) {
    if (ctx.cancellationDetails?.cancelRequested) {
      await store.settleNode(run.id, node.id, launch, 'CANCELLED', { error: 'cancelled', output: result.text });
    }
    throw new CancelledFailure(`prompt node "${node.id}" cancelled`);
  }
  const bytes = Buffer.byteLength(result.text);
  const captured = { output: result.text, outputBytes: bytes, truncated: false, exitCode: null };
  if (result.error) {
    const error = `prompt node "${node.id}" failed: ${result.error}`;
    const failures = await store.attemptFailed(run.id, node.id, launch, ctx.info.attempt, { ...captured, error });
    throw ApplicationFailure.create({ message: error, type: 'UPSTREAM_FAILED', nonRetryable: failures > (node.retries ?? 0) });
  }
  await store.completeNode(run.id, node.id, launch, captured);
  return { status: 'SUCCEEDED', value: whenValue(result.text), alreadyCompleted: false };
}
