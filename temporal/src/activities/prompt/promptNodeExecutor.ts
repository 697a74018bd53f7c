import { MeshError } from '@keelson/schema';
import { runAgentTurn, type AgentTurnDeps } from '@keelson/providers';
import type { PromptNodeExecutor } from '../runs/runActivities';

/**
 * The prompt-node executor: one agent turn through the provider registry on the workflow surface.
 * The node's `allowed_tools` are the only tools offered (rib tools are default-off; none named is a
 * text-only turn), each run through the worker's rib host, with path arguments confined to the run's
 * working directory and `$ARTIFACTS_DIR` (`builtin:path_confinement`). The run's cancel aborts the
 * turn, the node's timeout bounds it, and every streamed event heartbeats. The turn's usage is one
 * ledger row under the workflow's rib. Without any provider, CAPABILITY_UNSUPPORTED. `ready` is
 * awaited before each turn (the worker's lazily activated rib host).
 */
export function createPromptNodeExecutor(deps: AgentTurnDeps, opts: { ready?: () => Promise<unknown> } = {}): PromptNodeExecutor {
  return async (req) => {
    if (!deps.registry.defaultProvider) {
      throw new MeshError(
        'CAPABILITY_UNSUPPORTED',
        `prompt node "${req.nodeId}": no model provider is registered on this worker (set ANTHROPIC_API_KEY, OPENAI_API_KEY, KEELSON_ANTHROPIC_BASE_URL, KEELSON_OPENAI_BASE_URL or the config file's providers)`,
      );
    }
    // The rib host (tools, request/response policies) is activated before the first turn.
    await opts.ready?.();
    const turn = runAgentTurn(deps, {
      prompt: req.prompt,
      ...(req.system ? { system: req.system } : {}),
      allowedTools: req.allowedTools,
      ...(req.model ? { model: req.model } : {}),
      ...(req.modelClass ? { modelClass: req.modelClass } : {}),
      ...(req.reasoningEffort ? { reasoningEffort: req.reasoningEffort } : {}),
      cwd: req.cwd,
      allowedDirectories: [req.cwd, req.artifactsDir],
      abortSignal: req.signal,
      timeoutMs: req.timeoutMs,
      turnContext: { runId: req.runId, nodeId: req.nodeId, workflowName: req.workflowName, inputs: req.inputs, artifactsDir: req.artifactsDir },
      ...(req.ribId ? { ribId: req.ribId } : {}),
      surface: 'workflow',
      ...(req.caller ? { caller: req.caller } : {}),
      runId: req.runId,
      nodeId: req.nodeId,
      workflowName: req.workflowName,
      onProgress: req.heartbeat,
      ...(req.steer ? { steer: req.steer } : {}),
    });
    const result = await turn.result;
    return {
      text: result.text,
      stopReason: result.stopReason,
      ...(result.model ? { model: result.model } : {}),
      ...(result.status !== 'ok' ? { error: result.error ?? result.status } : {}),
    };
  };
}
