import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Entry, JsonSchema, ConversationToolSpec } from '../conversation/conversation';
import { summarize, contentText } from '../conversation/summarize';
import { estimateTokens, type ReplyPlan } from '../script/replyPlan';
import { describeZodError as describeIssues } from '@keelson/schema';
import type { ParsedRequest, ProtocolAdapter } from './adapter';
import { argumentPieces, newId, textPieces, type Frame, type Rendered } from './frames';

// The Anthropic Messages API: POST /v1/messages, streamed as named SSE events.

const block = z.looseObject({ type: z.string() });

const requestSchema = z.looseObject({
  model: z.string().min(1),
  // claude-code 2.1 also sends `system` messages between the turns.
  messages: z.array(z.looseObject({ role: z.string(), content: z.union([z.string(), z.array(block)]) })),
  system: z.union([z.string(), z.array(block)]).optional(),
  tools: z.array(z.looseObject({ name: z.string().min(1), description: z.string().optional(), input_schema: z.looseObject({}).optional() })).optional(),
  stream: z.boolean().optional(),
});

type Block = z.infer<typeof block> & Record<string, unknown>;

function parseMessages(messages: z.infer<typeof requestSchema>['messages']): { system: string[]; entries: Entry[] } {
  const system: string[] = [];
  const entries: Entry[] = [];
  for (const message of messages) {
    const blocks: Block[] = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : (message.content as Block[]);
    if (message.role !== 'user' && message.role !== 'assistant') {
      system.push(contentText(blocks));
      continue;
    }
    if (message.role === 'assistant') {
      const toolCalls = blocks.filter((b) => b.type === 'tool_use').map((b) => ({ id: String(b.id), name: String(b.name) }));
      entries.push({ kind: 'assistant', toolCalls });
      continue;
    }
    const texts: string[] = [];
    for (const b of blocks) {
      if (b.type === 'tool_result') entries.push({ kind: 'toolResult', callId: String(b.tool_use_id), output: contentText(b.content) });
      else if (b.type === 'text' && typeof b.text === 'string') texts.push(b.text);
    }
    if (texts.length > 0) entries.push({ kind: 'user', texts });
  }
  return { system, entries };
}

function toolsOf(tools: z.infer<typeof requestSchema>['tools']): ConversationToolSpec[] {
  // Server tools (web search and the like) carry a `type` and no input schema: the client cannot run them.
  return (tools ?? [])
    .filter((t) => t.input_schema)
    .map((t) => ({ name: t.name, kind: 'function' as const, description: t.description ?? '', schema: t.input_schema as JsonSchema }));
}

/** The `toolu_…` id Anthropic gives a tool call. */
function toolUseId(callId: string): string {
  return `toolu_${callId.replace(/^call_/, '')}`;
}

function usage(inputTokens: number, outputTokens: number) {
  return { input_tokens: inputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: outputTokens };
}

function outputChars(plan: ReplyPlan): number {
  return plan.reasoning.length + plan.text.length + plan.toolCalls.reduce((n, c) => n + c.name.length + c.input.length, 0);
}

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

export const anthropic: ProtocolAdapter = {
  parse(body) {
    const result = requestSchema.safeParse(body);
    if (!result.success) return { invalid: describeIssues(result.error, 'body') };
    const req = result.data;
    const { system, entries } = parseMessages(req.messages);
    if (req.system !== undefined) system.unshift(contentText(req.system));
    const conv = summarize({ protocol: 'anthropic', model: req.model, system, entries, tools: toolsOf(req.tools) });
    return { conv, stream: req.stream === true, body: req };
  },

  render(plan: ReplyPlan, req: ParsedRequest, inputTokens: number): Rendered {
    const id = newId('msg');
    const model = req.conv.model;
    const stopReason = plan.truncated ? 'max_tokens' : plan.toolCalls.length > 0 ? 'tool_use' : 'end_turn';
    const outputTokens = estimateTokens(outputChars(plan));
    const signature = randomBytes(32).toString('base64');

    if (!req.stream) {
      const content: unknown[] = [];
      if (plan.reasoning) content.push({ type: 'thinking', thinking: plan.reasoning, signature });
      if (plan.text || plan.toolCalls.length === 0) content.push({ type: 'text', text: plan.text });
      for (const call of plan.toolCalls) content.push({ type: 'tool_use', id: toolUseId(call.id), name: call.name, input: JSON.parse(call.input) });
      return {
        json: { id, type: 'message', role: 'assistant', model, content, stop_reason: stopReason, stop_sequence: null, usage: usage(inputTokens, outputTokens) },
      };
    }

    const frames: Frame[] = [];
    const send = (type: string, payload: object, delta = false) => frames.push({ event: type, data: JSON.stringify({ type, ...payload }), delta });
    send('message_start', {
      message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: usage(inputTokens, 1) },
    });
    let index = 0;
    const start = (contentBlock: object) => {
      send('content_block_start', { index, content_block: contentBlock });
      if (index === 0) send('ping', {});
    };
    if (plan.reasoning) {
      start({ type: 'thinking', thinking: '', signature: '' });
      for (const piece of textPieces(plan.reasoning)) send('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: piece } }, true);
      send('content_block_delta', { index, delta: { type: 'signature_delta', signature } });
      send('content_block_stop', { index });
      index++;
    }
    if (plan.text || plan.toolCalls.length === 0) {
      start({ type: 'text', text: '' });
      for (const piece of textPieces(plan.text)) send('content_block_delta', { index, delta: { type: 'text_delta', text: piece } }, true);
      send('content_block_stop', { index });
      index++;
    }
    for (const call of plan.toolCalls) {
      start({ type: 'tool_use', id: toolUseId(call.id), name: call.name, input: {} });
      for (const piece of argumentPieces(call.input)) send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } }, true);
      send('content_block_stop', { index });
      index++;
    }
    send('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: usage(inputTokens, outputTokens) });
    send('message_stop', {});
    return { stream: frames };
  },

  errorBody(status, message) {
    return { type: 'error', error: { type: ERROR_TYPES[status] ?? 'api_error', message }, request_id: newId('req') };
  },
};

/** The answer to `POST /v1/messages/count_tokens`. */
export function anthropicCountTokens(body: unknown): { input_tokens: number } {
  return { input_tokens: estimateTokens(JSON.stringify(body ?? '').length) };
}
