import type { DriverEvent } from '../contract';
import { clipJson, clipText, toolResultText } from './clip';
import { arr, EMPTY, rec, stringOrUndefined, type MappedOutput, type OutputMapper } from './cliDriver';

/**
 * The "stream-json" output claude-code and qwen-code share (`--output-format stream-json
 * --include-partial-messages`): `system/init` announces the session id; `stream_event` carries
 * text and thinking deltas; `assistant` messages carry tool calls (and whole text when no delta was
 * streamed); `user` messages carry tool results; `result` ends the turn, with `permission_denials`.
 */
export class StreamJsonMapper implements OutputMapper {
  /** Message ids whose text arrived as deltas (their whole-text blocks are not sent again). */
  private readonly streamed = new Set<string>();
  private currentMessage: string | null = null;

  /**
   * @param approvals map permission denials to APPROVAL_REQUEST (claude-code)
   * @param promptTool the CLI's tool for asking the user a question (qwen-code `ask_user_question`):
   *   each of its questions is also a PROMPT_REQUEST, answered with `answerPrompt`
   */
  constructor(
    private readonly approvals: boolean,
    private readonly promptTool: string | null = null,
  ) {}

  line(v: Record<string, unknown>): MappedOutput {
    switch (v.type) {
      case 'system':
        return v.subtype === 'init' && stringOrUndefined(v.session_id) ? { events: [], nativeId: stringOrUndefined(v.session_id) } : EMPTY;
      case 'stream_event':
        return this.streamEvent(rec(v.event));
      case 'assistant':
        return this.assistant(rec(v.message));
      case 'user':
        return this.user(rec(v.message));
      case 'result':
        return this.result(v);
      default:
        return EMPTY;
    }
  }

  private streamEvent(ev: Record<string, unknown>): MappedOutput {
    if (ev.type === 'message_start') {
      this.currentMessage = stringOrUndefined(rec(ev.message).id) ?? null;
      return EMPTY;
    }
    if (ev.type !== 'content_block_delta') return EMPTY;
    const delta = rec(ev.delta);
    if (this.currentMessage) this.streamed.add(this.currentMessage);
    if (delta.type === 'text_delta' && stringOrUndefined(delta.text)) {
      const { text, truncated } = clipText(delta.text as string);
      return { events: [{ type: 'ASSISTANT_DELTA', text, messageId: this.currentMessage, ...(truncated ? { truncated } : {}) }] };
    }
    if (delta.type === 'thinking_delta' && stringOrUndefined(delta.thinking)) {
      const { text, truncated } = clipText(delta.thinking as string);
      return { events: [{ type: 'REASONING_DELTA', text, ...(truncated ? { truncated } : {}) }] };
    }
    return EMPTY;
  }

  private assistant(message: Record<string, unknown>): MappedOutput {
    const id = stringOrUndefined(message.id) ?? null;
    const wasStreamed = id !== null && this.streamed.has(id);
    const events: DriverEvent[] = [];
    for (const block of arr(message.content).map(rec)) {
      if (block.type === 'tool_use') {
        const input = clipJson(block.input);
        const toolUseId = stringOrUndefined(block.id) ?? '';
        events.push({ type: 'TOOL_USE', toolUseId, name: stringOrUndefined(block.name) ?? 'unknown', input: input.value, ...(input.truncated ? { truncated: true } : {}) });
        if (this.promptTool !== null && block.name === this.promptTool) events.push(...promptRequests(toolUseId, rec(block.input)));
      } else if (!wasStreamed && block.type === 'text' && stringOrUndefined(block.text)) {
        const { text, truncated } = clipText(block.text as string);
        events.push({ type: 'ASSISTANT_DELTA', text, messageId: id, ...(truncated ? { truncated } : {}) });
      } else if (!wasStreamed && block.type === 'thinking' && stringOrUndefined(block.thinking)) {
        const { text, truncated } = clipText(block.thinking as string);
        events.push({ type: 'REASONING_DELTA', text, ...(truncated ? { truncated } : {}) });
      }
    }
    return { events };
  }

  private user(message: Record<string, unknown>): MappedOutput {
    const events: DriverEvent[] = [];
    for (const block of arr(message.content).map(rec)) {
      if (block.type !== 'tool_result') continue;
      const { text, truncated } = clipText(toolResultText(block.content));
      events.push({ type: 'TOOL_RESULT', toolUseId: stringOrUndefined(block.tool_use_id) ?? '', output: text, isError: block.is_error === true, ...(truncated ? { truncated } : {}) });
    }
    return { events };
  }

  private result(v: Record<string, unknown>): MappedOutput {
    const events: DriverEvent[] = [];
    if (this.approvals) {
      for (const denial of arr(v.permission_denials).map(rec)) {
        const toolName = stringOrUndefined(denial.tool_name) ?? 'unknown';
        const input = clipJson(denial.tool_input);
        events.push({
          type: 'APPROVAL_REQUEST',
          requestId: stringOrUndefined(denial.tool_use_id) ?? `${toolName}-${events.length + 1}`,
          toolName,
          input: input.value,
          reason: `${toolName} needs approval under the session's permission mode`,
        });
      }
    }
    const ok = v.is_error !== true && (v.subtype === undefined || v.subtype === 'success');
    const text = stringOrUndefined(v.result) ?? null;
    return { events, result: { ok, text, error: ok ? null : text ?? stringOrUndefined(v.subtype) ?? 'the CLI reported an error' } };
  }
}

/**
 * The questions of an ask-the-user tool call (`{ questions: [{ question, header?, options: [{ label,
 * description? }], multiSelect? }] }`) as PROMPT_REQUESTs: one per question, its id the tool call's
 * (with `-<n>` past the first). Questions without text are left out.
 */
export function promptRequests(toolUseId: string, input: Record<string, unknown>): DriverEvent[] {
  const out: DriverEvent[] = [];
  arr(input.questions)
    .map(rec)
    .forEach((q, i) => {
      const question = stringOrUndefined(q.question);
      if (!question) return;
      const options = arr(q.options)
        .map(rec)
        .filter((o) => stringOrUndefined(o.label))
        .map((o) => ({ label: clipText(o.label as string).text, description: stringOrUndefined(o.description) ? clipText(o.description as string).text : null }));
      out.push({
        type: 'PROMPT_REQUEST',
        promptId: i === 0 ? toolUseId || 'prompt' : `${toolUseId || 'prompt'}-${i + 1}`,
        question: clipText(question).text,
        header: stringOrUndefined(q.header) ?? null,
        options,
        multiSelect: q.multiSelect === true,
      });
    });
  return out;
}
