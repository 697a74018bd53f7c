import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import type { Logger } from '@keelson/service';
import type { ApprovalObserver, MessageChunk, PolicyContext, RibAgentTurn, RibAgentTurnRequest, RibAgentTurnResult, StopReason, TokenUsage, ToolCaller } from '@keelson/ribs-contract';
import type { UsageLedger } from '../ledger/usageLedger';
import type { ProviderRegistry } from '../registry/providerRegistry';
import type { SessionStore, StoredSession } from '../sessions/sessionStore';
import type { ModelCallEvent, ModelCallRequest, ModelProvider, ToolCall, TurnMessage } from '../types';
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

/** What a turn accumulates as it runs; its result is settled from it. */
interface TurnState {
  provider?: ModelProvider;
  model: string;
  session?: StoredSession;
  sessionId?: string;
  usage: TokenUsage;
  reportedModel?: string;
  text: string;
  rounds: number;
  toolCalls: number;
}

/** The turn's settled result from its state; a billed turn writes its ledger row (a failing write is logged, never thrown). */
async function settleTurn(
  deps: AgentTurnDeps,
  req: AgentTurnRequest,
  turn: { turnId: string; started: number },
  state: TurnState,
  status: RibAgentTurnResult['status'],
  stopReason: StopReason,
  error?: string,
): Promise<Settled> {
  const { provider, text, sessionId, rounds, usage, toolCalls } = state;
  const result: RibAgentTurnResult = {
    status,
    text,
    stopReason,
    ...(error !== undefined ? { error } : {}),
    ...(provider ? { providerId: provider.id } : {}),
    ...(provider ? { model: state.reportedModel ?? state.model } : {}),
    ...(sessionId ? { sessionId } : {}),
    ...(rounds > 0 ? { usage: { ...usage } } : {}),
  };
  if (deps.ledger && provider && rounds > 0 && usage.inputTokens + usage.outputTokens > 0) {
    try {
      await deps.ledger.record({
        id: turn.turnId,
        ribId: req.ribId ?? null,
        surface: req.surface,
        runId: req.runId,
        nodeId: req.nodeId,
        workflowName: req.workflowName,
        providerId: provider.id,
        model: result.model ?? state.model,
        inputTokens: usage.inputTokens,
        outputTokens: usage.outputTokens,
        status,
        stopReason,
        sessionId,
        rounds,
        toolCalls,
        durationMs: Date.now() - turn.started,
      });
    } catch (err) {
      deps.log?.error({ err, turnId: turn.turnId, ribId: req.ribId }, 'recording a turn in the usage ledger failed');
    }
  }
  return { result, rounds, toolCalls };
}

/**
 * Picks the turn's provider (a resumed session's owner wins when it resumes sessions; a session of
 * another owner fails the turn), then its model and session id, into `state`.
 */
async function resolveTurnProvider(deps: AgentTurnDeps, req: AgentTurnRequest, state: TurnState): Promise<ModelProvider> {
  state.provider = deps.registry.pick(req.provider);
  if (deps.sessions && req.resumeSessionId) {
    const owner = deps.registry.get(req.resumeSessionId.split(':')[0] ?? '');
    if (owner?.capabilities.sessionResume) {
      state.session = await deps.sessions.load(req.resumeSessionId);
      if (!state.session || state.session.ribId !== (req.ribId ?? null)) {
        state.session = undefined;
        throw new TurnFailure(`resumeSessionId ${JSON.stringify(req.resumeSessionId)} names no session of this ${req.ribId ? `rib (${req.ribId})` : 'caller'}`);
      }
      state.provider = owner;
    }
    // A provider without sessionResume ignores it.
  }
  if (!state.provider) throw new TurnFailure('no model provider is registered (set ANTHROPIC_API_KEY, OPENAI_API_KEY, a KEELSON_*_BASE_URL or the config file\'s providers)');
  const turnProvider = state.provider;
  state.model = req.model ?? (req.modelClass ? deps.registry.resolveModel(turnProvider, { modelClass: req.modelClass }) : (state.session?.model ?? turnProvider.defaultModel));
  if (deps.sessions && turnProvider.capabilities.sessionResume) state.sessionId = state.session?.id ?? `${turnProvider.id}:${randomUUID()}`;
  return turnProvider;
}

/** The policy context of the turn's prompt, answer and tool calls. */
function turnPolicyContext(req: AgentTurnRequest, providerId: string, cwd: string): PolicyContext {
  return {
    surface: req.surface,
    ...(req.ribId ? { ribId: req.ribId } : {}),
    provider: providerId,
    cwd,
    ...(req.allowedDirectories?.length ? { allowedDirectories: req.allowedDirectories } : {}),
    ...(req.workflowName ? { workflowName: req.workflowName } : {}),
    ...(req.nodeId ? { nodeId: req.nodeId } : {}),
  };
}

/** One model call: streams its text into `state.text` (a heartbeat per event), then books its usage and appends its answer to `messages`. */
async function callModel(
  provider: ModelProvider,
  call: Omit<ModelCallRequest, 'model' | 'system' | 'messages'>,
  req: AgentTurnRequest,
  state: TurnState,
  messages: TurnMessage[],
): Promise<Extract<ModelCallEvent, { type: 'end' }>> {
  let end: Extract<ModelCallEvent, { type: 'end' }> | undefined;
  for await (const event of provider.call({
    model: state.model,
    ...(req.system ? { system: req.system } : {}),
    messages,
    ...call,
  })) {
    req.onProgress?.();
    if (event.type === 'text') state.text += event.text;
    else if (event.type === 'end') end = event;
  }
  if (!end) throw new TurnFailure(`provider ${provider.id} ended a call without its result`);
  state.usage.inputTokens += end.usage.inputTokens;
  state.usage.outputTokens += end.usage.outputTokens;
  state.reportedModel = end.model ?? state.reportedModel;
  state.text = end.text;
  messages.push({ role: 'assistant', text: end.text, toolCalls: end.toolCalls, ...(end.reasoning.length ? { reasoning: end.reasoning } : {}) });
  return end;
}

/** The turn's final answer: the `response` policies may withhold or rewrite it; the session is saved. */
async function finishAnswer(
  deps: AgentTurnDeps,
  host: TurnToolHost | undefined,
  req: AgentTurnRequest,
  state: TurnState,
  provider: ModelProvider,
  policyCtx: PolicyContext,
  signal: AbortSignal,
  messages: TurnMessage[],
): Promise<void> {
  if (host && state.text) {
    const answer = await host.policies.evaluate({ phase: 'response', text: state.text }, policyCtx, signal);
    if (answer.outcome === 'deny') {
      state.text = '';
      throw new TurnFailure(`the answer was withheld by ${answer.policyId}: ${answer.reason}`);
    }
    if (answer.data !== undefined) state.text = answer.data;
  }
  if (deps.sessions && state.sessionId) {
    await deps.sessions.save({ id: state.sessionId, providerId: provider.id, model: state.model, ribId: req.ribId ?? null, messages });
  }
}

async function execute(deps: AgentTurnDeps, req: AgentTurnRequest, stream: ChunkQueue): Promise<Settled> {
  const turn = { started: Date.now(), turnId: req.turnId ?? randomUUID() };
  const { turnId } = turn;
  const host = typeof deps.host === 'function' ? deps.host() : deps.host;
  const controller = new AbortController();
  const stopOn = () => controller.abort(new Stopped('aborted'));
  if (req.abortSignal?.aborted) stopOn();
  else req.abortSignal?.addEventListener('abort', stopOn, { once: true });
  const timeoutMs = req.timeoutMs !== undefined && req.timeoutMs > 0 ? req.timeoutMs : (deps.defaultTimeoutMs ?? DEFAULT_TURN_TIMEOUT_MS);
  const timer = setTimeout(() => controller.abort(new Stopped('timeout')), timeoutMs);
  const signal = controller.signal;

  const state: TurnState = { model: req.model ?? '', usage: { inputTokens: 0, outputTokens: 0 }, text: '', rounds: 0, toolCalls: 0 };
  const settle = (status: RibAgentTurnResult['status'], stopReason: StopReason, error?: string) => settleTurn(deps, req, turn, state, status, stopReason, error);

  try {
    const turnProvider = await resolveTurnProvider(deps, req, state);
    const reasoningEffort = turnProvider.capabilities.reasoningEffort ? req.reasoningEffort : undefined;
    const cwd = req.cwd ?? deps.neutralCwd;
    if (!req.cwd) await mkdir(deps.neutralCwd, { recursive: true });
    const policyCtx = turnPolicyContext(req, turnProvider.id, cwd);

    if (host) {
      const gate = await host.policies.evaluate({ phase: 'request', prompt: req.prompt }, policyCtx, signal, req.onApproval);
      if (gate.outcome === 'deny') throw new TurnFailure(`the prompt was refused by ${gate.policyId}: ${gate.reason}`);
    }
    const projected = projectTools(host, req.ribId, req, new Set(deps.toolDenylist ?? []));
    const offered = new Set(projected.specs.map((s) => s.name));
    if (projected.dropped.length > 0) {
      deps.log?.warn({ turnId, ribId: req.ribId, nodeId: req.nodeId, dropped: projected.dropped }, 'tools the turn named are not offered to the model');
    }
    const messages: TurnMessage[] = [...(state.session?.messages ?? []), { role: 'user', text: req.prompt }];
    const maxRounds = deps.maxRounds ?? DEFAULT_MAX_ROUNDS;
    const maxTokens = turnProvider.maxTokens ?? deps.maxTokens ?? DEFAULT_MAX_TOKENS;

    for (;;) {
      if (state.rounds >= maxRounds) throw new TurnFailure(`the turn made ${maxRounds} model calls without finishing (KEELSON_AGENT_MAX_ROUNDS)`);
      state.rounds++;
      state.text = '';
      const end = await callModel(turnProvider, { tools: projected.specs, maxTokens, ...(reasoningEffort ? { reasoningEffort } : {}), signal }, req, state, messages);
      if (end.stopReason !== 'tool_use' || end.toolCalls.length === 0) {
        await finishAnswer(deps, host, req, state, turnProvider, policyCtx, signal, messages);
        return await settle('ok', end.stopReason === 'max_tokens' ? 'max_tokens' : 'end');
      }
      const results: Extract<TurnMessage, { role: 'tool' }>['results'] = [];
      for (const call of end.toolCalls) {
        state.toolCalls++;
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
    if (!(err instanceof TurnFailure)) deps.log?.warn({ err, turnId, providerId: state.provider?.id }, 'an agent turn failed');
    // A session continues from its last clean state: a failed turn hands back only an id that still resolves.
    if (!state.session) state.sessionId = undefined;
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
