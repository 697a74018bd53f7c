import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import type { Logger } from '@keelson/service';
import type { ApprovalObserver, MessageChunk, PolicyContext, RibAgentTurn, RibAgentTurnRequest, RibAgentTurnResult, StopReason, TokenUsage, ToolCaller } from '@keelson/ribs-contract';
import type { UsageLedger } from '../ledger/usageLedger';
import type { ProviderRegistry } from '../registry/providerRegistry';
import type { SessionStore, StoredSession } from '../sessions/sessionStore';
import type { ModelCallEvent, ModelProvider, ToolCall, TurnMessage } from '../types';
import { ChunkQueue } from './chunkQueue';
import { projectTools, type TurnToolHost } from './turnTools';

/** @default output cap of one model call */
export const DEFAULT_MAX_TOKENS = 8192;
/** @default model calls of one turn */
export const DEFAULT_MAX_ROUNDS = 24;
/** @default bound of a turn that sets no timeoutMs */
export const DEFAULT_TURN_TIMEOUT_MS = 600_000;

/** What the turn engine runs on. */
export interface AgentTurnDeps {
  registry: ProviderRegistry;
  /** The rib host tools run through (registry, policies, grants); a getter when the host is built after the seams. */
  host?: TurnToolHost | (() => TurnToolHost | undefined);
  /** Where billed turns are recorded. */
  ledger?: UsageLedger;
  /** Where sessions are kept; without one no provider offers `sessionResume`. */
  sessions?: SessionStore;
  /** The working directory of a turn without `cwd`: a neutral directory, never the server's cwd. */
  neutralCwd: string;
  /** The operator's `toolDenylist` (applied to turns no rib owns; a rib's turns get the host's floor). */
  toolDenylist?: readonly string[];
  /** @default 8192 */
  maxTokens?: number;
  /** @default 24 */
  maxRounds?: number;
  /** @default 600000 */
  defaultTimeoutMs?: number;
  log?: Pick<Logger, 'warn' | 'error'>;
}

/** A turn as the engine takes it: the rib request plus who runs it and where. */
export interface AgentTurnRequest extends RibAgentTurnRequest {
  /** The rib the turn runs for: the tools' caller, the ledger row's and the session's owner. */
  ribId?: string;
  /** The policy surface. */
  surface: 'rib' | 'workflow' | 'chat';
  runId?: string;
  nodeId?: string;
  workflowName?: string;
  /** The ledger row's id. @default a random uuid */
  turnId?: string;
  /** Called on every streamed event (a heartbeat). */
  onProgress?: () => void;
  /** Who the turn runs for: its tools act as this caller (`ToolContext.caller`). */
  caller?: Readonly<ToolCaller>;
  /**
   * The turn's steer queue (seed 002's `/steer`): read after each tool round, before the next model
   * call; each note it returns joins the conversation as a message from the operator.
   */
  steer?: () => Promise<readonly string[]>;
  /** Hears each policy `ask` the turn waits on open (its inbox approval) and be answered. */
  onApproval?: ApprovalObserver;
}

/** How a steer note reads to the model. */
export function steerMessage(note: string): string {
  return `[Steering note from the operator, sent while you work: ${note}]`;
}

class Stopped {
  constructor(readonly status: 'aborted' | 'timeout') {}
}

class TurnFailure extends Error {}

/** A turn result as settled, with the engine's bookkeeping. */
interface Settled {
  result: RibAgentTurnResult;
  rounds: number;
  toolCalls: number;
}

/**
 * Runs one agent turn: resolves the provider (a hint, else the default; a resumed session keeps its
 * own) and the model (explicit model, else the class through the config file's `modelClasses`, then
 * the provider's map, else its default), projects the named tools through the operator floor (none
 * named: text-only), and loops model → tool calls (through the rib host: input parsing, policies,
 * `builtin:path_confinement` over `allowedDirectories`) → tool results → model, at most `maxRounds`
 * calls. `request` / `response` policies gate the prompt and the answer. The result never rejects;
 * the stream carries live tool chunks, then the settled text, an error chunk when the turn failed,
 * and `done`. A billed turn writes one ledger row.
 */
export function runAgentTurn(deps: AgentTurnDeps, req: AgentTurnRequest): RibAgentTurn {
  const stream = new ChunkQueue();
  const result = execute(deps, req, stream).then(({ result: r }) => {
    if (r.text) stream.push({ type: 'text', text: r.text });
    if (r.status !== 'ok') stream.push({ type: 'error', message: r.error ?? r.status });
    stream.push({ type: 'done', stopReason: r.stopReason });
    stream.close();
    return r;
  });
  return { stream, result };
}

async function execute(deps: AgentTurnDeps, req: AgentTurnRequest, stream: ChunkQueue): Promise<Settled> {
  const started = Date.now();
  const turnId = req.turnId ?? randomUUID();
  const host = typeof deps.host === 'function' ? deps.host() : deps.host;
  const controller = new AbortController();
  const stopOn = () => controller.abort(new Stopped('aborted'));
  if (req.abortSignal?.aborted) stopOn();
  else req.abortSignal?.addEventListener('abort', stopOn, { once: true });
  const timeoutMs = req.timeoutMs !== undefined && req.timeoutMs > 0 ? req.timeoutMs : (deps.defaultTimeoutMs ?? DEFAULT_TURN_TIMEOUT_MS);
  const timer = setTimeout(() => controller.abort(new Stopped('timeout')), timeoutMs);
  const signal = controller.signal;

  let provider: ModelProvider | undefined;
  let model = req.model ?? '';
  let session: StoredSession | undefined;
  let sessionId: string | undefined;
  const usage: TokenUsage = { inputTokens: 0, outputTokens: 0 };
  let reportedModel: string | undefined;
  let text = '';
  let rounds = 0;
  let toolCalls = 0;

  const settle = async (status: RibAgentTurnResult['status'], stopReason: StopReason, error?: string): Promise<Settled> => {
    const result: RibAgentTurnResult = {
      status,
      text,
      stopReason,
      ...(error !== undefined ? { error } : {}),
      ...(provider ? { providerId: provider.id } : {}),
      ...(provider ? { model: reportedModel ?? model } : {}),
      ...(sessionId ? { sessionId } : {}),
      ...(rounds > 0 ? { usage: { ...usage } } : {}),
    };
    if (deps.ledger && provider && rounds > 0 && usage.inputTokens + usage.outputTokens > 0) {
      try {
        await deps.ledger.record({
          id: turnId,
          ribId: req.ribId ?? null,
          surface: req.surface,
          runId: req.runId,
          nodeId: req.nodeId,
          workflowName: req.workflowName,
          providerId: provider.id,
          model: result.model ?? model,
          inputTokens: usage.inputTokens,
          outputTokens: usage.outputTokens,
          status,
          stopReason,
          sessionId,
          rounds,
          toolCalls,
          durationMs: Date.now() - started,
        });
      } catch (err) {
        deps.log?.error({ err, turnId, ribId: req.ribId }, 'recording a turn in the usage ledger failed');
      }
    }
    return { result, rounds, toolCalls };
  };

  try {
    provider = deps.registry.pick(req.provider);
    if (deps.sessions && req.resumeSessionId) {
      const owner = deps.registry.get(req.resumeSessionId.split(':')[0] ?? '');
      if (owner?.capabilities.sessionResume) {
        session = await deps.sessions.load(req.resumeSessionId);
        if (!session || session.ribId !== (req.ribId ?? null)) {
          session = undefined;
          throw new TurnFailure(`resumeSessionId ${JSON.stringify(req.resumeSessionId)} names no session of this ${req.ribId ? `rib (${req.ribId})` : 'caller'}`);
        }
        provider = owner;
      }
      // A provider without sessionResume ignores it.
    }
    if (!provider) throw new TurnFailure('no model provider is registered (set ANTHROPIC_API_KEY, OPENAI_API_KEY, a KEELSON_*_BASE_URL or the config file\'s providers)');
    const turnProvider = provider;
    model = req.model ?? (req.modelClass ? deps.registry.resolveModel(turnProvider, { modelClass: req.modelClass }) : (session?.model ?? turnProvider.defaultModel));
    if (deps.sessions && turnProvider.capabilities.sessionResume) sessionId = session?.id ?? `${turnProvider.id}:${randomUUID()}`;
    const reasoningEffort = turnProvider.capabilities.reasoningEffort ? req.reasoningEffort : undefined;
    const cwd = req.cwd ?? deps.neutralCwd;
    if (!req.cwd) await mkdir(deps.neutralCwd, { recursive: true });
    const policyCtx: PolicyContext = {
      surface: req.surface,
      ...(req.ribId ? { ribId: req.ribId } : {}),
      provider: turnProvider.id,
      cwd,
      ...(req.allowedDirectories?.length ? { allowedDirectories: req.allowedDirectories } : {}),
      ...(req.workflowName ? { workflowName: req.workflowName } : {}),
      ...(req.nodeId ? { nodeId: req.nodeId } : {}),
    };

    if (host) {
      const gate = await host.policies.evaluate({ phase: 'request', prompt: req.prompt }, policyCtx, signal, req.onApproval);
      if (gate.outcome === 'deny') throw new TurnFailure(`the prompt was refused by ${gate.policyId}: ${gate.reason}`);
    }
    const projected = projectTools(host, req.ribId, req, new Set(deps.toolDenylist ?? []));
    const offered = new Set(projected.specs.map((s) => s.name));
    if (projected.dropped.length > 0) {
      deps.log?.warn({ turnId, ribId: req.ribId, nodeId: req.nodeId, dropped: projected.dropped }, 'tools the turn named are not offered to the model');
    }
    const messages: TurnMessage[] = [...(session?.messages ?? []), { role: 'user', text: req.prompt }];
    const maxRounds = deps.maxRounds ?? DEFAULT_MAX_ROUNDS;
    const maxTokens = turnProvider.maxTokens ?? deps.maxTokens ?? DEFAULT_MAX_TOKENS;

    for (;;) {
      if (rounds >= maxRounds) throw new TurnFailure(`the turn made ${maxRounds} model calls without finishing (KEELSON_AGENT_MAX_ROUNDS)`);
      rounds++;
      text = '';
      let end: Extract<ModelCallEvent, { type: 'end' }> | undefined;
      for await (const event of turnProvider.call({
        model,
        ...(req.system ? { system: req.system } : {}),
        messages,
        tools: projected.specs,
        maxTokens,
        ...(reasoningEffort ? { reasoningEffort } : {}),
        signal,
      })) {
        req.onProgress?.();
        if (event.type === 'text') text += event.text;
        else if (event.type === 'end') end = event;
      }
      if (!end) throw new TurnFailure(`provider ${turnProvider.id} ended a call without its result`);
      usage.inputTokens += end.usage.inputTokens;
      usage.outputTokens += end.usage.outputTokens;
      reportedModel = end.model ?? reportedModel;
      text = end.text;
      messages.push({ role: 'assistant', text: end.text, toolCalls: end.toolCalls, ...(end.reasoning.length ? { reasoning: end.reasoning } : {}) });
      if (end.stopReason !== 'tool_use' || end.toolCalls.length === 0) {
        if (host && text) {
          const answer = await host.policies.evaluate({ phase: 'response', text }, policyCtx, signal);
          if (answer.outcome === 'deny') {
            text = '';
            throw new TurnFailure(`the answer was withheld by ${answer.policyId}: ${answer.reason}`);
          }
          if (answer.data !== undefined) text = answer.data;
        }
        if (deps.sessions && sessionId) await deps.sessions.save({ id: sessionId, providerId: turnProvider.id, model, ribId: req.ribId ?? null, messages });
        return await settle('ok', end.stopReason === 'max_tokens' ? 'max_tokens' : 'end');
      }
      const results: Extract<TurnMessage, { role: 'tool' }>['results'] = [];
      for (const call of end.toolCalls) {
        toolCalls++;
        results.push(await runTool(host, offered, call, req, turnProvider, cwd, signal, stream));
        if (signal.aborted) throw signal.reason;
      }
      messages.push({ role: 'tool', results });
      for (const note of req.steer ? await req.steer() : []) messages.push({ role: 'user', text: steerMessage(note) });
    }
  } catch (err) {
    if (signal.aborted && signal.reason instanceof Stopped) {
      const status = signal.reason.status;
      return settle(status, status, status === 'timeout' ? `the turn timed out after ${timeoutMs} ms` : 'the turn was aborted');
    }
    if (!(err instanceof TurnFailure)) deps.log?.warn({ err, turnId, providerId: provider?.id }, 'an agent turn failed');
    // A session continues from its last clean state: a failed turn hands back only an id that still resolves.
    if (!session) sessionId = undefined;
    return settle('error', 'error', err instanceof Error ? err.message : String(err));
  } finally {
    clearTimeout(timer);
    req.abortSignal?.removeEventListener('abort', stopOn);
  }
}

async function runTool(
  host: TurnToolHost | undefined,
  offered: ReadonlySet<string>,
  call: ToolCall,
  req: AgentTurnRequest,
  provider: ModelProvider,
  cwd: string,
  signal: AbortSignal,
  stream: ChunkQueue,
): Promise<{ toolUseId: string; content: string; isError?: boolean }> {
  stream.push({ type: 'tool_use', toolUseId: call.id, name: call.name, input: call.input });
  let content: string;
  let isError: boolean;
  if (!host || !offered.has(call.name)) {
    content = `tool '${call.name}' is not available in this turn`;
    isError = true;
  } else {
    const outcome = await host.executeTool({
      name: call.name,
      input: call.input,
      surface: req.surface,
      ...(req.ribId ? { callerRibId: req.ribId } : {}),
      cwd,
      signal,
      toolUseId: call.id,
      provider: provider.id,
      ...(req.allowedDirectories?.length ? { allowedDirectories: req.allowedDirectories } : {}),
      ...(req.workflowName ? { workflowName: req.workflowName } : {}),
      ...(req.nodeId ? { nodeId: req.nodeId } : {}),
      ...(req.turnContext ? { turnContext: req.turnContext } : {}),
      ...(req.caller ? { caller: req.caller } : {}),
      ...(req.onApproval ? { onApproval: req.onApproval } : {}),
    });
    isError = outcome.isError;
    content = outcome.content || (outcome.isError ? `tool '${call.name}' failed (${outcome.status})` : '');
  }
  const chunk: MessageChunk = { type: 'tool_result', toolUseId: call.id, content, ...(isError ? { isError: true } : {}) };
  stream.push(chunk);
  return { toolUseId: call.id, content, ...(isError ? { isError: true } : {}) };
}
