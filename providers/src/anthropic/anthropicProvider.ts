import type { ModelClass, ReasoningEffort } from '@keelson/schema';
import { endEvent, eventJson, parseToolInput, postForEvents } from '../http/postStream';
import { providerFacts, type HttpProviderOptions } from '../http/providerOptions';
import {
  ProviderError,
  type CallStopReason,
  type ModelCallEvent,
  type ModelCallRequest,
  type ModelProvider,
  type ReasoningBlock,
  type ToolCall,
  type TurnMessage,
} from '../types';

/** The Messages API version this provider speaks. */
export const ANTHROPIC_VERSION = '2023-06-01';

/** Built-in class map of the Anthropic provider (the config file's `modelClasses` wins over it). */
export const ANTHROPIC_MODEL_CLASSES: Readonly<Record<ModelClass, string>> = {
  fast: 'claude-haiku-4-5',
  balanced: 'claude-sonnet-4-5',
  deep: 'claude-opus-4-1',
};

/** Extended-thinking budget per effort; `none` turns thinking off. */
const THINKING_BUDGET: Record<Exclude<ReasoningEffort, 'none'>, number> = { low: 1024, medium: 4096, high: 16_000, xhigh: 32_000 };
/** The smallest budget the API accepts. */
const MIN_THINKING_BUDGET = 1024;

/** The Anthropic Messages API: `baseUrl` is the API host (`/v1/messages` is appended); `apiKey` goes as `x-api-key`. */
export type AnthropicProviderOptions = HttpProviderOptions;

type Block = Record<string, unknown> & { type: string };
type WireMessage = { role: 'user' | 'assistant'; content: Block[] };

function toolInputObject(input: unknown): Record<string, unknown> {
  return typeof input === 'object' && input !== null && !Array.isArray(input) ? (input as Record<string, unknown>) : {};
}

/** The neutral conversation as Messages API turns: alternating roles, tool results in user turns. */
export function anthropicMessages(messages: readonly TurnMessage[]): WireMessage[] {
  const out: WireMessage[] = [];
  const push = (role: WireMessage['role'], content: Block[]) => {
    if (content.length === 0) return;
    const last = out.at(-1);
    if (last && last.role === role) last.content.push(...content);
    else out.push({ role, content });
  };
  for (const m of messages) {
    if (m.role === 'user') push('user', [{ type: 'text', text: m.text }]);
    else if (m.role === 'tool') {
      push(
        'user',
        m.results.map((r) => ({ type: 'tool_result', tool_use_id: r.toolUseId, content: r.content, ...(r.isError ? { is_error: true } : {}) })),
      );
    } else {
      const blocks: Block[] = [];
      for (const r of m.reasoning ?? []) if (r.signature) blocks.push({ type: 'thinking', thinking: r.text, signature: r.signature });
      if (m.text) blocks.push({ type: 'text', text: m.text });
      for (const c of m.toolCalls) blocks.push({ type: 'tool_use', id: c.id, name: c.name, input: toolInputObject(c.input) });
      push('assistant', blocks);
    }
  }
  return out;
}

function stopReasonOf(raw: unknown): CallStopReason {
  if (raw === 'max_tokens') return 'max_tokens';
  if (raw === 'tool_use') return 'tool_use';
  return 'end';
}

interface OpenBlock {
  type: string;
  text: string;
  json: string;
  id?: string;
  name?: string;
  signature?: string;
}

/**
 * A provider speaking the Anthropic Messages API (`POST <baseUrl>/v1/messages`, streamed): text,
 * tool use, extended thinking for a reasoning-effort hint (its blocks replayed with their signature
 * across tool rounds), usage and the stop reason.
 */
export function anthropicProvider(opts: AnthropicProviderOptions): ModelProvider {
  const id = opts.id ?? 'anthropic';
  const label = `provider ${id}`;
  const root = opts.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
  const url = `${root}/v1/messages`;
  return {
    ...providerFacts(opts, { id: 'anthropic', displayName: 'Anthropic', reasoningEffort: true }),

    async *call(req: ModelCallRequest): AsyncGenerator<ModelCallEvent> {
      const body: Record<string, unknown> = {
        model: req.model,
        max_tokens: req.maxTokens,
        messages: anthropicMessages(req.messages),
        stream: true,
      };
      if (req.system) body.system = req.system;
      if (req.tools.length > 0) body.tools = req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema }));
      if (req.reasoningEffort && req.reasoningEffort !== 'none') {
        const budget = Math.min(THINKING_BUDGET[req.reasoningEffort], req.maxTokens - 1);
        if (budget >= MIN_THINKING_BUDGET) body.thinking = { type: 'enabled', budget_tokens: budget };
      }
      const headers: Record<string, string> = { 'anthropic-version': ANTHROPIC_VERSION };
      if (opts.apiKey) headers['x-api-key'] = opts.apiKey;

      const blocks = new Map<number, OpenBlock>();
      let model: string | undefined;
      let inputTokens = 0;
      let outputTokens = 0;
      let stop: unknown;
      let stopped = false;
      for await (const event of postForEvents(label, url, headers, body, req.signal)) {
        const data = eventJson<Record<string, any>>(label, event); // eslint-disable-line @typescript-eslint/no-explicit-any
        const type = (data.type as string | undefined) ?? event.event;
        if (type === 'message_start') {
          model = data.message?.model;
          const u = data.message?.usage ?? {};
          inputTokens = (u.input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
          outputTokens = u.output_tokens ?? 0;
        } else if (type === 'content_block_start') {
          const b = data.content_block ?? {};
          blocks.set(data.index, { type: b.type, text: typeof b.text === 'string' ? b.text : '', json: '', id: b.id, name: b.name });
          if (b.type === 'text' && b.text) yield { type: 'text', text: b.text };
        } else if (type === 'content_block_delta') {
          const block = blocks.get(data.index);
          const d = data.delta ?? {};
          if (!block) continue;
          if (d.type === 'text_delta') {
            block.text += d.text;
            yield { type: 'text', text: d.text };
          } else if (d.type === 'input_json_delta') block.json += d.partial_json;
          else if (d.type === 'thinking_delta') {
            block.text += d.thinking;
            yield { type: 'reasoning', text: d.thinking };
          } else if (d.type === 'signature_delta') block.signature = (block.signature ?? '') + d.signature;
        } else if (type === 'message_delta') {
          if (data.delta?.stop_reason !== undefined) stop = data.delta.stop_reason;
          if (typeof data.usage?.output_tokens === 'number') outputTokens = data.usage.output_tokens;
          if (typeof data.usage?.input_tokens === 'number') inputTokens = Math.max(inputTokens, data.usage.input_tokens);
        } else if (type === 'message_stop') {
          stopped = true;
        } else if (type === 'error') {
          throw new ProviderError(`${label} streamed an error: ${data.error?.message ?? JSON.stringify(data.error ?? data)}`);
        }
      }
      if (!stopped) throw new ProviderError(`${label}: the stream ended before message_stop`);

      const ordered = [...blocks.entries()].sort(([a], [b]) => a - b).map(([, b]) => b);
      const toolCalls: ToolCall[] = ordered
        .filter((b) => b.type === 'tool_use')
        .map((b) => ({ id: b.id ?? '', name: b.name ?? '', input: parseToolInput(b.json) }));
      const reasoning: ReasoningBlock[] = ordered
        .filter((b) => b.type === 'thinking')
        .map((b) => ({ text: b.text, ...(b.signature ? { signature: b.signature } : {}) }));
      const text = ordered
        .filter((b) => b.type === 'text')
        .map((b) => b.text)
        .join('');
      yield endEvent(stopReasonOf(stop), { text, toolCalls, reasoning, usage: { inputTokens, outputTokens } }, model);
    },
  };
}
