import type { ReadCall } from './cliRequests';
import { payloads, type SseEvent } from './http';

/** An answer read back the way a client accumulates a stream. */
export interface Answer {
  text: string;
  reasoning: string;
  calls: ReadCall[];
  /** `end_turn`/`tool_use`, `stop`/`tool_calls`, or `completed`. */
  stop: string | null;
  usage: Record<string, unknown> | null;
}

type P = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Accumulates an Anthropic Messages stream. */
export function readAnthropic(events: SseEvent[]): Answer {
  const answer: Answer = { text: '', reasoning: '', calls: [], stop: null, usage: null };
  const blocks = new Map<number, P>();
  for (const e of payloads<P>(events)) {
    if (e.type === 'content_block_start') {
      blocks.set(e.index, e.content_block);
      if (e.content_block.type === 'tool_use') answer.calls.push({ id: e.content_block.id, name: e.content_block.name, input: '' });
    } else if (e.type === 'content_block_delta') {
      if (e.delta.type === 'text_delta') answer.text += e.delta.text;
      if (e.delta.type === 'thinking_delta') answer.reasoning += e.delta.thinking;
      if (e.delta.type === 'input_json_delta') answer.calls[answer.calls.length - 1].input += e.delta.partial_json;
    } else if (e.type === 'message_delta') {
      answer.stop = e.delta.stop_reason;
      answer.usage = e.usage;
    }
  }
  return answer;
}

/** Accumulates a Chat Completions stream. */
export function readChat(events: SseEvent[]): Answer {
  const answer: Answer = { text: '', reasoning: '', calls: [], stop: null, usage: null };
  for (const chunk of payloads<P>(events)) {
    if (chunk.usage) answer.usage = chunk.usage;
    for (const choice of chunk.choices) {
      const d = choice.delta;
      if (d.content) answer.text += d.content;
      if (d.reasoning_content) answer.reasoning += d.reasoning_content;
      for (const tc of d.tool_calls ?? []) {
        answer.calls[tc.index] ??= { id: '', name: '', input: '' };
        const call = answer.calls[tc.index];
        if (tc.id) call.id = tc.id;
        if (tc.function?.name) call.name = tc.function.name;
        if (tc.function?.arguments) call.input += tc.function.arguments;
      }
      if (choice.finish_reason) answer.stop = choice.finish_reason;
    }
  }
  return answer;
}

/** Reads a Responses stream the way codex does: from the finished output items and `response.completed`. */
export function readResponses(events: SseEvent[]): Answer {
  const answer: Answer = { text: '', reasoning: '', calls: [], stop: null, usage: null };
  for (const e of payloads<P>(events)) {
    if (e.type === 'response.output_item.done') {
      const item = e.item;
      if (item.type === 'message') answer.text += item.content.map((c: P) => c.text).join('');
      if (item.type === 'reasoning') answer.reasoning += item.summary.map((s: P) => s.text).join('');
      if (item.type === 'function_call') answer.calls.push({ id: item.call_id, name: item.name, input: item.arguments });
      if (item.type === 'custom_tool_call') answer.calls.push({ id: item.call_id, name: item.name, input: item.input });
    } else if (e.type === 'response.completed') {
      answer.stop = e.response.status;
      answer.usage = e.response.usage;
    }
  }
  return answer;
}

/** The reader for a protocol. */
export function readAnswer(protocol: 'anthropic' | 'chat' | 'responses', events: SseEvent[]): Answer {
  return protocol === 'anthropic' ? readAnthropic(events) : protocol === 'chat' ? readChat(events) : readResponses(events);
}
