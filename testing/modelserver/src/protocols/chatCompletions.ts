import { z } from 'zod';
import type { Entry, JsonSchema, ConversationToolSpec } from '../conversation/conversation';
import { summarize, contentText } from '../conversation/summarize';
import { estimateTokens, type ReplyPlan } from '../script/replyPlan';
import { describeZodError as describeIssues } from '@keelson/schema';
import type { ParsedRequest, ProtocolAdapter } from './adapter';
import { argumentPieces, newId, textPieces, type Frame, type Rendered } from './frames';
import { openaiErrorBody } from './openaiError';

// The OpenAI Chat Completions API: POST /v1/chat/completions, streamed as bare `data:` chunks
// ending in `data: [DONE]`.

const messageSchema = z.looseObject({
  role: z.string(),
  content: z.unknown().optional(),
  tool_calls: z.array(z.looseObject({ id: z.string(), function: z.looseObject({ name: z.string() }).optional() })).optional(),
  tool_call_id: z.string().optional(),
  name: z.string().optional(),
});

const requestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(messageSchema).min(1),
  tools: z
    .array(z.looseObject({ type: z.string(), function: z.looseObject({ name: z.string().min(1), description: z.string().optional(), parameters: z.looseObject({}).optional() }).optional() }))
    .optional(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
});

function userTexts(content: unknown): string[] {
  if (typeof content === 'string') return [content];
  if (Array.isArray(content)) return content.flatMap((p) => (p && typeof p === 'object' && typeof p.text === 'string' ? [p.text as string] : []));
  return [];
}

function parse(messages: z.infer<typeof messageSchema>[]): { system: string[]; entries: Entry[] } {
  const system: string[] = [];
  const entries: Entry[] = [];
  for (const m of messages) {
    switch (m.role) {
      case 'system':
      case 'developer':
        system.push(contentText(m.content));
        break;
      case 'user': {
        const texts = userTexts(m.content);
        if (texts.length > 0) entries.push({ kind: 'user', texts });
        break;
      }
      case 'assistant':
        entries.push({ kind: 'assistant', toolCalls: (m.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function?.name ?? '' })) });
        break;
      case 'tool':
        entries.push({ kind: 'toolResult', callId: m.tool_call_id ?? '', output: contentText(m.content) });
        break;
      case 'function':
        entries.push({ kind: 'toolResult', callId: m.name ?? '', output: contentText(m.content) });
        break;
    }
  }
  return { system, entries };
}

function toolsOf(tools: z.infer<typeof requestSchema>['tools']): ConversationToolSpec[] {
  return (tools ?? []).flatMap((t) =>
    t.type === 'function' && t.function
      ? [{ name: t.function.name, kind: 'function' as const, description: t.function.description ?? '', schema: t.function.parameters as JsonSchema | undefined }]
      : [],
  );
}

export const chatCompletions: ProtocolAdapter = {
  parse(body) {
    const result = requestSchema.safeParse(body);
    if (!result.success) return { invalid: describeIssues(result.error, 'body') };
    const req = result.data;
    const { system, entries } = parse(req.messages);
    const conv = summarize({ protocol: 'chat', model: req.model, system, entries, tools: toolsOf(req.tools) });
    return { conv, stream: req.stream === true, includeUsage: req.stream_options?.include_usage === true, body: req };
  },

  render(plan: ReplyPlan, req: ParsedRequest, inputTokens: number): Rendered {
    const id = newId('chatcmpl', '-');
    const created = Math.floor(Date.now() / 1000);
    const model = req.conv.model;
    const finishReason = plan.truncated ? 'length' : plan.toolCalls.length > 0 ? 'tool_calls' : 'stop';
    const reasoningTokens = plan.reasoning ? estimateTokens(plan.reasoning.length) : 0;
    const completionTokens = estimateTokens(plan.reasoning.length + plan.text.length + plan.toolCalls.reduce((n, c) => n + c.name.length + c.input.length, 0));
    const usage = {
      prompt_tokens: inputTokens,
      completion_tokens: completionTokens,
      total_tokens: inputTokens + completionTokens,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: reasoningTokens },
    };

    if (!req.stream) {
      const message: Record<string, unknown> = {
        role: 'assistant',
        content: plan.text || (plan.toolCalls.length > 0 ? null : ''),
        refusal: null,
      };
      if (plan.reasoning) message.reasoning_content = plan.reasoning;
      if (plan.toolCalls.length > 0) {
        message.tool_calls = plan.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.input } }));
      }
      return {
        json: {
          id,
          object: 'chat.completion',
          created,
          model,
          system_fingerprint: null,
          choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason }],
          usage,
        },
      };
    }

    const frames: Frame[] = [];
    const chunk = (delta: object, finish: string | null = null, isDelta = false) =>
      frames.push({
        data: JSON.stringify({
          id,
          object: 'chat.completion.chunk',
          created,
          model,
          system_fingerprint: null,
          choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
          ...(req.includeUsage ? { usage: null } : {}),
        }),
        delta: isDelta,
      });
    chunk({ role: 'assistant', content: '' });
    for (const piece of textPieces(plan.reasoning)) chunk({ reasoning_content: piece }, null, true);
    for (const piece of textPieces(plan.text)) chunk({ content: piece }, null, true);
    plan.toolCalls.forEach((call, index) => {
      chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] });
      for (const piece of argumentPieces(call.input)) chunk({ tool_calls: [{ index, function: { arguments: piece } }] }, null, true);
    });
    chunk({}, finishReason);
    if (req.includeUsage) {
      frames.push({ data: JSON.stringify({ id, object: 'chat.completion.chunk', created, model, system_fingerprint: null, choices: [], usage }) });
    }
    frames.push({ data: '[DONE]' });
    return { stream: frames };
  },

  errorBody: openaiErrorBody,
};
