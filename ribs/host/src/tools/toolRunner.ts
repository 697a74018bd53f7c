import type { AuditSink } from '@keelson/platform';
import { describeZodError } from '@keelson/schema';
import type { ApprovalObserver, MessageChunk, PolicyContext, PolicySurface, ToolCaller, ToolContext, ToolResultChunk } from '@keelson/ribs-contract';
import { errorMessage } from '../errors';
import type { PolicyEngine } from '../policy/policyEngine';
import type { ToolRegistry } from './toolRegistry';

/** One tool execution. */
export interface ToolRunRequest {
  name: string;
  input: unknown;
  /** The turn surface, for policies. */
  surface: PolicySurface;
  /** The rib whose turn (or cross-rib call) runs the tool. */
  callerRibId?: string;
  /** Set on cross-rib calls: the rib that owns the tool. */
  targetRibId?: string;
  /** @default the host's neutral directory (the keelson home) */
  cwd?: string;
  signal?: AbortSignal;
  /** Bounds the whole execution, policy approval included. */
  timeoutMs?: number;
  /** Receives every chunk after its result policy ran, in order. */
  onChunk?: (chunk: MessageChunk) => void;
  /** Stamped on result chunks that carry an empty id. */
  toolUseId?: string;
  allowedDirectories?: readonly string[];
  provider?: string;
  workflowName?: string;
  nodeId?: string;
  turnContext?: Readonly<Record<string, unknown>>;
  /** Who the turn runs for; handed to the tool (`ToolContext.caller`). */
  caller?: Readonly<ToolCaller>;
  /** Hears an `ask` on the call open (its inbox id) and be answered. */
  onApproval?: ApprovalObserver;
}

/** How an execution ended. */
export type ToolRunStatus = 'ok' | 'tool-error' | 'unknown-tool' | 'invalid-input' | 'policy-denied' | 'cancelled' | 'timeout';

/** The settled execution: every result chunk (after result policies) and their joined text. */
export interface ToolRunOutcome {
  status: ToolRunStatus;
  isError: boolean;
  content: string;
  chunks: ToolResultChunk[];
  /** The deciding policy of a `policy-denied` outcome. */
  policyId?: string;
}

class Stop {
  constructor(readonly status: 'cancelled' | 'timeout', readonly message: string) {}
}

/** The outcome of a stopped execution. */
function stopOutcome(stop: Stop): ToolRunOutcome {
  return failed(stop.status, stop.message);
}

function failed(status: ToolRunStatus, content: string, policyId?: string): ToolRunOutcome {
  return { status, isError: true, content, chunks: [], ...(policyId ? { policyId } : {}) };
}

/**
 * Runs registered tools: parses the input with the tool's schema, evaluates `tool_call` policies
 * (an `ask` waits on the approval port), executes with an abort signal, and passes every emitted
 * `tool_result` through the `tool_result` policies (deny replaces it with the reason, an allow with
 * text redacts it). A throwing tool reads as an `isError` result. Cancellation and the timeout
 * settle the run at once; chunks the tool emits afterwards are dropped.
 */
export class ToolRunner {
  constructor(
    private readonly registry: ToolRegistry,
    private readonly policies: PolicyEngine,
    private readonly neutralCwd: string,
    private readonly hostSignal?: AbortSignal,
    private readonly audit?: AuditSink,
  ) {}

  /** Runs the tool, and records the call (tool, caller, surface, input digest, outcome) in the audit trail. */
  async run(req: ToolRunRequest): Promise<ToolRunOutcome> {
    const outcome = await this.execute(req);
    this.audit?.record({
      kind: 'TOOL',
      operation: req.name,
      args: req.input,
      outcome: outcome.status === 'ok' ? 'OK' : outcome.status.toUpperCase().replace(/-/g, '_'),
      surface: req.surface,
      ...(req.caller ? { caller: req.caller } : {}),
    });
    return outcome;
  }

  private async execute(req: ToolRunRequest): Promise<ToolRunOutcome> {
    const tool = this.registry.get(req.name);
    if (!tool) return failed('unknown-tool', `no tool named '${req.name}' is registered`);

    const { controller, stopped, release } = runStops(req, this.hostSignal);
    try {
      if (controller.signal.aborted) return stopOutcome(controller.signal.reason as Stop);
      const parsed = tool.definition.inputSchema.safeParse(req.input);
      if (!parsed.success) return failed('invalid-input', `invalid input for '${req.name}': ${describeZodError(parsed.error, 'input')}`);

      const policyCtx: PolicyContext = {
        surface: req.surface,
        ribId: req.callerRibId,
        targetRibId: req.targetRibId,
        provider: req.provider,
        cwd: req.cwd ?? this.neutralCwd,
        allowedDirectories: req.allowedDirectories,
        workflowName: req.workflowName,
        nodeId: req.nodeId,
      };
      const verdict = await Promise.race([
        this.policies.evaluate(
          { phase: 'tool_call', tool: req.name, args: parsed.data, ribId: req.callerRibId, targetRibId: req.targetRibId, provider: req.provider },
          policyCtx,
          controller.signal,
          req.onApproval,
        ),
        stopped,
      ]);
      if (verdict instanceof Stop) return stopOutcome(verdict);
      if (verdict.outcome === 'deny') return failed('policy-denied', `denied by ${verdict.policyId}: ${verdict.reason}`, verdict.policyId);

      const chunks = resultChunks(this.policies, req, policyCtx);
      const ctx: ToolContext = {
        cwd: req.cwd ?? this.neutralCwd,
        ...(req.allowedDirectories?.length ? { allowedDirectories: req.allowedDirectories } : {}),
        emit: chunks.emit,
        abortSignal: controller.signal,
        ...(req.callerRibId ? { callerRibId: req.callerRibId } : {}),
        ...(req.turnContext ? { turnContext: req.turnContext } : {}),
        ...(req.caller ? { caller: req.caller } : {}),
      };
      const execution = (async () => {
        try {
          await tool.definition.execute(parsed.data, ctx);
        } catch (err) {
          chunks.emit({ type: 'tool_result', toolUseId: '', content: `tool '${req.name}' failed: ${errorMessage(err)}`, isError: true });
        }
        await chunks.drained();
      })();
      const ended = await Promise.race([execution.then(() => undefined), stopped]);
      chunks.close();
      if (ended instanceof Stop) return stopOutcome(ended);
      const results = chunks.results;
      const isError = results.some((c) => c.isError === true);
      return { status: isError ? 'tool-error' : 'ok', isError, content: results.map((c) => c.content).join('\n'), chunks: results };
    } finally {
      release();
    }
  }
}

/**
 * What stops one execution: the caller's signal and the host's (cancelled) and the request's
 * timeout abort `controller` with a `Stop`; `stopped` resolves with it; `release` drops the timer
 * and the listeners.
 */
function runStops(req: ToolRunRequest, hostSignal: AbortSignal | undefined) {
  const controller = new AbortController();
  const stopOn = (signal: AbortSignal | undefined, stop: () => Stop) => {
    if (!signal) return () => undefined;
    const onAbort = () => controller.abort(stop());
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    return () => signal.removeEventListener('abort', onAbort);
  };
  const cleanups = [
    stopOn(req.signal, () => new Stop('cancelled', `tool '${req.name}' was cancelled`)),
    stopOn(hostSignal, () => new Stop('cancelled', 'the host is shutting down')),
  ];
  const timer =
    req.timeoutMs !== undefined
      ? setTimeout(() => controller.abort(new Stop('timeout', `tool '${req.name}' timed out after ${req.timeoutMs}ms`)), req.timeoutMs)
      : undefined;
  const stopped = new Promise<Stop>((resolve) => {
    if (controller.signal.aborted) resolve(controller.signal.reason as Stop);
    else controller.signal.addEventListener('abort', () => resolve(controller.signal.reason as Stop), { once: true });
  });
  const release = () => {
    if (timer) clearTimeout(timer);
    for (const cleanup of cleanups) cleanup();
  };
  return { controller, stopped, release };
}

/**
 * The tool's `emit`: result chunks are normalized and passed, in order, through the `tool_result`
 * policies into `results` and on to `req.onChunk`; once `close`d, nothing more is kept or forwarded.
 * `drained` settles when every chunk emitted so far went through.
 */
function resultChunks(policies: PolicyEngine, req: ToolRunRequest, policyCtx: PolicyContext) {
  const results: ToolResultChunk[] = [];
  let open = true;
  let gate = Promise.resolve();
  const pass = (chunk: MessageChunk) => {
    gate = gate.then(async () => {
      let out = chunk;
      if (chunk.type === 'tool_result') {
        const decision = await policies.evaluate({ phase: 'tool_result', tool: req.name, result: chunk.content, isError: chunk.isError }, policyCtx);
        if (decision.outcome === 'deny') out = { ...chunk, content: `result withheld by ${decision.policyId}: ${decision.reason}`, isError: true };
        else if (decision.data !== undefined) out = { ...chunk, content: decision.data };
        if (!open) return;
        results.push(out as ToolResultChunk);
      }
      if (open) req.onChunk?.(out);
    });
  };
  const emit = (chunk: MessageChunk) => {
    if (!open || typeof chunk !== 'object' || chunk === null) return;
    if (chunk.type !== 'tool_result') return pass(chunk);
    const content = typeof chunk.content === 'string' ? chunk.content : JSON.stringify(chunk.content ?? null);
    pass({
      type: 'tool_result',
      toolUseId: chunk.toolUseId || req.toolUseId || '',
      content,
      ...(chunk.isError ? { isError: true } : {}),
    });
  };
  return {
    results,
    emit,
    drained: () => gate,
    close: () => {
      open = false;
    },
  };
}
