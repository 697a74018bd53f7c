import { z } from 'zod';
import type { Entry, JsonSchema, ConversationToolSpec } from '../conversation/conversation';
import { summarize, contentText } from '../conversation/summarize';
import { estimateTokens, type PlannedToolCall, type ReplyPlan } from '../script/replyPlan';
import { describeZodError as describeIssues } from '@keelson/schema';
import type { ParsedRequest, ProtocolAdapter } from './adapter';
import { argumentPieces, newId, textPieces, type Frame, type Rendered } from './frames';
import { openaiErrorBody } from './openaiError';

// The OpenAI Responses API: POST /v1/responses, streamed as named SSE events with a
// `sequence_number`, ending with `response.completed` (no [DONE]). Shapes follow what the API
// sends, field for field, because codex parses every output item it is given.

const itemSchema = z.looseObject({ type: z.string().optional(), role: z.string().optional() });

const requestSchema = z.looseObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(itemSchema)]),
  instructions: z.string().nullish(),
  tools: z.array(z.looseObject({ type: z.string(), name: z.string().optional() })).nullish(),
  stream: z.boolean().nullish(),
});

type Item = Record<string, unknown> & { type?: string; role?: string };

function parse(input: string | Item[], instructions: string | null | undefined): { system: string[]; entries: Entry[] } {
  const system = instructions ? [instructions] : [];
  if (typeof input === 'string') return { system, entries: [{ kind: 'user', texts: [input] }] };
  const entries: Entry[] = [];
  for (const item of input) {
    const type = item.type ?? (item.role ? 'message' : '');
    if (type === 'message') {
      if (item.role === 'system' || item.role === 'developer') system.push(contentText(item.content));
      else if (item.role === 'assistant') entries.push({ kind: 'assistant', toolCalls: [] });
      else entries.push({ kind: 'user', texts: partTexts(item.content) });
    } else if (type.endsWith('_output')) {
      entries.push({ kind: 'toolResult', callId: String(item.call_id ?? ''), output: contentText(item.output) });
    } else if (type.endsWith('_call')) {
      entries.push({ kind: 'assistant', toolCalls: [{ id: String(item.call_id ?? item.id ?? ''), name: String(item.name ?? type) }] });
    }
  }
  return { system, entries };
}

function partTexts(content: unknown): string[] {
  if (typeof content === 'string') return [content];
  if (!Array.isArray(content)) return [];
  return content.flatMap((p) => (p && typeof p === 'object' && typeof p.text === 'string' ? [p.text as string] : []));
}

function toolsOf(tools: Array<Record<string, unknown>> | null | undefined): ConversationToolSpec[] {
  return (tools ?? []).flatMap((t): ConversationToolSpec[] => {
    const name = typeof t.name === 'string' ? t.name : '';
    const description = typeof t.description === 'string' ? t.description : '';
    if (!name) return [];
    if (t.type === 'function') return [{ name, kind: 'function', description, schema: t.parameters as JsonSchema | undefined }];
    if (t.type === 'custom') return [{ name, kind: 'custom', description }];
    return [];
  });
}

/** The output item for a finished tool call. */
function callItem(call: PlannedToolCall, itemId: string, status: 'in_progress' | 'completed') {
  return call.kind === 'custom'
    ? { id: itemId, type: 'custom_tool_call', status, call_id: call.id, input: status === 'completed' ? call.input : '', name: call.name }
    : { id: itemId, type: 'function_call', status, arguments: status === 'completed' ? call.input : '', call_id: call.id, name: call.name };
}

const outputText = (text: string) => ({ type: 'output_text', annotations: [], logprobs: [], text });

/** A response's token usage, as the API reports it. */
interface Usage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

/** Appends one SSE event (its `sequence_number` next in line); `delta` marks a streamed piece. */
type Send = (type: string, payload: object, delta?: boolean) => void;

/** The response object of `req` in a given state, echoing the request's settings as the API does. */
function responseObject(req: ParsedRequest, id: string, createdAt: number) {
  const body = req.body;
  const reasoningParam = (body.reasoning ?? {}) as { effort?: unknown; summary?: unknown };
  return (status: 'in_progress' | 'completed', output: unknown[], usageValue: Usage | null) => ({
    id,
    object: 'response',
    created_at: createdAt,
    status,
    background: false,
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model: req.conv.model,
    output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    reasoning: { effort: reasoningParam.effort ?? null, summary: reasoningParam.summary ?? null },
    store: body.store ?? true,
    temperature: 1,
    text: { format: { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_p: 1,
    truncation: 'disabled',
    usage: usageValue,
    user: null,
    metadata: {},
  });
}

/** Streams a reasoning item (its summary text in pieces) and adds it to `output`. */
function sendReasoning(send: Send, output: unknown[], text: string): void {
  const itemId = newId('rs');
  const output_index = output.length;
  const done = { id: itemId, type: 'reasoning', summary: [{ type: 'summary_text', text }] };
  send('response.output_item.added', { output_index, item: { id: itemId, type: 'reasoning', summary: [] } });
  send('response.reasoning_summary_part.added', { item_id: itemId, output_index, summary_index: 0, part: { type: 'summary_text', text: '' } });
  for (const delta of textPieces(text)) send('response.reasoning_summary_text.delta', { item_id: itemId, output_index, summary_index: 0, delta }, true);
  send('response.reasoning_summary_text.done', { item_id: itemId, output_index, summary_index: 0, text });
  send('response.reasoning_summary_part.done', { item_id: itemId, output_index, summary_index: 0, part: { type: 'summary_text', text } });
  send('response.output_item.done', { output_index, item: done });
  output.push(done);
}

/** Streams an assistant message item (its text in pieces) and adds it to `output`. */
function sendMessage(send: Send, output: unknown[], text: string): void {
  const itemId = newId('msg');
  const output_index = output.length;
  const done = { id: itemId, type: 'message', status: 'completed', content: [outputText(text)], role: 'assistant' };
  send('response.output_item.added', { output_index, item: { id: itemId, type: 'message', status: 'in_progress', content: [], role: 'assistant' } });
  send('response.content_part.added', { item_id: itemId, output_index, content_index: 0, part: outputText('') });
  for (const delta of textPieces(text)) send('response.output_text.delta', { item_id: itemId, output_index, content_index: 0, delta, logprobs: [] }, true);
  send('response.output_text.done', { item_id: itemId, output_index, content_index: 0, text, logprobs: [] });
  send('response.content_part.done', { item_id: itemId, output_index, content_index: 0, part: outputText(text) });
  send('response.output_item.done', { output_index, item: done });
  output.push(done);
}

/** Streams a function or custom tool call item (its input in pieces) and adds it to `output`. */
function sendToolCall(send: Send, output: unknown[], call: PlannedToolCall): void {
  const itemId = newId(call.kind === 'custom' ? 'ctc' : 'fc');
  const output_index = output.length;
  const done = callItem(call, itemId, 'completed');
  send('response.output_item.added', { output_index, item: callItem(call, itemId, 'in_progress') });
  if (call.kind === 'custom') {
    for (const delta of argumentPieces(call.input)) send('response.custom_tool_call_input.delta', { item_id: itemId, output_index, delta }, true);
    send('response.custom_tool_call_input.done', { item_id: itemId, output_index, input: call.input });
  } else {
    for (const delta of argumentPieces(call.input)) send('response.function_call_arguments.delta', { item_id: itemId, output_index, delta }, true);
    send('response.function_call_arguments.done', { item_id: itemId, output_index, name: call.name, arguments: call.input });
  }
  send('response.output_item.done', { output_index, item: done });
  output.push(done);
}

export const responses: ProtocolAdapter = {
  parse(body) {
    const result = requestSchema.safeParse(body);
    if (!result.success) return { invalid: describeIssues(result.error, 'body') };
    const req = result.data;
    const { system, entries } = parse(req.input as string | Item[], req.instructions);
    const conv = summarize({ protocol: 'responses', model: req.model, system, entries, tools: toolsOf(req.tools) });
    return { conv, stream: req.stream === true, body: req };
  },

  render(plan: ReplyPlan, req: ParsedRequest, inputTokens: number): Rendered {
    const id = newId('resp');
    const createdAt = Math.floor(Date.now() / 1000);
    const reasoningTokens = plan.reasoning ? estimateTokens(plan.reasoning.length) : 0;
    const outputTokens = estimateTokens(plan.reasoning.length + plan.text.length + plan.toolCalls.reduce((n, c) => n + c.name.length + c.input.length, 0));
    const usage: Usage = {
      input_tokens: inputTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: reasoningTokens },
      total_tokens: inputTokens + outputTokens,
    };
    const response = responseObject(req, id, createdAt);

    const frames: Frame[] = [];
    let sequence = 0;
    const send: Send = (type, payload, delta = false) => {
      frames.push({ event: type, data: JSON.stringify({ type, sequence_number: sequence++, ...payload }), delta });
    };
    const output: unknown[] = [];

    send('response.created', { response: response('in_progress', [], null) });
    send('response.in_progress', { response: response('in_progress', [], null) });
    if (plan.reasoning) sendReasoning(send, output, plan.reasoning);
    if (plan.text || plan.toolCalls.length === 0) sendMessage(send, output, plan.text);
    for (const call of plan.toolCalls) sendToolCall(send, output, call);

    const completed = response('completed', output, usage);
    if (!req.stream) return { json: completed };
    send('response.completed', { response: completed });
    return { stream: frames };
  },

  errorBody: openaiErrorBody,
};
