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

  /** @param approvals map permission denials to APPROVAL_REQUEST (claude-code) */
  constructor(private readonly approvals: boolean) {}

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
        events.push({ type: 'TOOL_USE', toolUseId: stringOrUndefined(block.id) ?? '', name: stringOrUndefined(block.name) ?? 'unknown', input: input.value, ...(input.truncated ? { truncated: true } : {}) });
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
