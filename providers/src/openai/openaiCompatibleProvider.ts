import type { ModelClass, ReasoningEffort } from '@keelson/schema';
import { endEvent, eventJson, parseToolInput, postForEvents } from '../http/postStream';
import { providerFacts, type HttpProviderOptions } from '../http/providerOptions';
import { ProviderError, type CallStopReason, type ModelCallEvent, type ModelCallRequest, type ModelProvider, type ToolCall, type TurnMessage } from '../types';

/** Built-in class map of the `openai` provider (the config file's `modelClasses` wins over it). */
export const OPENAI_MODEL_CLASSES: Readonly<Record<ModelClass, string>> = {
  fast: 'gpt-5-mini',
  balanced: 'gpt-5',
  deep: 'gpt-5',
};

/** Chat Completions' `reasoning_effort` values for our hints. */
const EFFORT: Record<ReasoningEffort, string> = { none: 'minimal', low: 'low', medium: 'medium', high: 'high', xhigh: 'high' };

/** Chat Completions: `baseUrl` is the API root ending in `/v1` (`/chat/completions` is appended); `apiKey` goes as a bearer token. */
export interface OpenAiCompatibleProviderOptions extends HttpProviderOptions {
  /** Whether the endpoint accepts `reasoning_effort` (many compatible servers reject it). @default false */
  reasoningEffort?: boolean;
  /**
   * The output-cap field: OpenAI's own API wants `max_completion_tokens` (its reasoning models reject
   * `max_tokens`), most compatible servers read `max_tokens`.
   * @default `max_completion_tokens` for api.openai.com, else `max_tokens`
   */
  maxTokensField?: 'max_tokens' | 'max_completion_tokens';
}

type WireMessage = Record<string, unknown> & { role: string };

/** The neutral conversation as Chat Completions messages. */
export function chatMessages(system: string | undefined, messages: readonly TurnMessage[]): WireMessage[] {
  const out: WireMessage[] = system ? [{ role: 'system', content: system }] : [];
  for (const m of messages) {
    if (m.role === 'user') out.push({ role: 'user', content: m.text });
    else if (m.role === 'tool') for (const r of m.results) out.push({ role: 'tool', tool_call_id: r.toolUseId, content: r.content });
    else {
      const message: WireMessage = { role: 'assistant', content: m.text || (m.toolCalls.length > 0 ? null : '') };
      if (m.toolCalls.length > 0) {
        message.tool_calls = m.toolCalls.map((c) => ({
          id: c.id,
          type: 'function',
          function: { name: c.name, arguments: typeof c.input === 'string' ? c.input : JSON.stringify(c.input ?? {}) },
        }));
      }
      out.push(message);
    }
  }
  return out;
}

function stopReasonOf(raw: unknown): CallStopReason {
  if (raw === 'length') return 'max_tokens';
  if (raw === 'tool_calls' || raw === 'function_call') return 'tool_use';
  return 'end';
}

interface ChunkJson {
  model?: string;
  error?: { message?: string } | string;
  choices?: {
    delta?: {
      content?: string | null;
      reasoning_content?: string | null;
      tool_calls?: { index?: number; id?: string; function?: { name?: string; arguments?: string } }[];
    };
    finish_reason?: string | null;
  }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
}

/**
 * A provider speaking the OpenAI Chat Completions API (`POST <baseUrl>/chat/completions`, streamed
 * with `stream_options.include_usage`) against any compatible endpoint: text, tool calls assembled
 * from their deltas, usage and the finish reason.
 */
export function openAiCompatibleProvider(opts: OpenAiCompatibleProviderOptions): ModelProvider {
  const id = opts.id ?? 'openai';
  const label = `provider ${id}`;
  const url = `${opts.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  const capField = opts.maxTokensField ?? (new URL(opts.baseUrl).hostname === 'api.openai.com' ? 'max_completion_tokens' : 'max_tokens');
  return {
    ...providerFacts(opts, { id: 'openai', displayName: 'OpenAI-compatible', reasoningEffort: opts.reasoningEffort ?? false }),

    async *call(req: ModelCallRequest): AsyncGenerator<ModelCallEvent> {
      const body: Record<string, unknown> = {
        model: req.model,
        messages: chatMessages(req.system, req.messages),
        [capField]: req.maxTokens,
        stream: true,
        stream_options: { include_usage: true },
      };
      if (req.tools.length > 0) {
        body.tools = req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.inputSchema } }));
      }
      if (req.reasoningEffort) body.reasoning_effort = EFFORT[req.reasoningEffort];
      const headers: Record<string, string> = opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {};

      let text = '';
      let model: string | undefined;
      let finish: string | undefined;
      let usage = { inputTokens: 0, outputTokens: 0 };
      const calls = new Map<number, { id: string; name: string; args: string }>();
      for await (const event of postForEvents(label, url, headers, body, req.signal)) {
        if (event.data.trim() === '[DONE]') break;
        const chunk = eventJson<ChunkJson>(label, event);
        if (chunk.error) {
          throw new ProviderError(`${label} streamed an error: ${typeof chunk.error === 'string' ? chunk.error : (chunk.error.message ?? JSON.stringify(chunk.error))}`);
        }
        model ??= chunk.model;
        if (chunk.usage) usage = { inputTokens: chunk.usage.prompt_tokens ?? 0, outputTokens: chunk.usage.completion_tokens ?? 0 };
        const choice = chunk.choices?.[0];
        if (!choice) continue;
        const delta = choice.delta ?? {};
        if (delta.reasoning_content) yield { type: 'reasoning', text: delta.reasoning_content };
        if (delta.content) {
          text += delta.content;
          yield { type: 'text', text: delta.content };
        }
        for (const part of delta.tool_calls ?? []) {
          const index = part.index ?? 0;
          const call = calls.get(index) ?? { id: '', name: '', args: '' };
          if (part.id) call.id = part.id;
          if (part.function?.name) call.name += part.function.name;
          if (part.function?.arguments) call.args += part.function.arguments;
          calls.set(index, call);
        }
        if (choice.finish_reason) finish = choice.finish_reason;
      }
      if (finish === undefined) throw new ProviderError(`${label}: the stream ended without a finish_reason`);
      const toolCalls: ToolCall[] = [...calls.entries()]
        .sort(([a], [b]) => a - b)
        .map(([index, c]) => ({ id: c.id || `call_${index}`, name: c.name, input: parseToolInput(c.args) }));
      yield endEvent(stopReasonOf(finish), { text, toolCalls, reasoning: [], usage }, model);
    },
  };
}
