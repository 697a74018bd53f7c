import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DriverEvent } from '../contract';
import type { OutputMapper, TurnResult } from './cliDriver';
import { CodexMapper } from './codex';
import { OpencodeMapper } from './opencode';
import { PiMapper } from './pi';
import { StreamJsonMapper } from './streamJson';

/** Feeds a captured run of the real CLI (test/fixtures) through a mapper, line by line. */
function replay(mapper: OutputMapper, fixture: string): { events: DriverEvent[]; nativeIds: string[]; result: TurnResult | undefined } {
  const text = readFileSync(join(__dirname, '..', '..', 'test', 'fixtures', fixture), 'utf8');
  const events: DriverEvent[] = [];
  const nativeIds: string[] = [];
  let result: TurnResult | undefined;
  for (const line of text.split('\n').filter(Boolean)) {
    const out = mapper.line(JSON.parse(line) as Record<string, unknown>);
    events.push(...out.events);
    if (out.nativeId) nativeIds.push(out.nativeId);
    if (out.result) result = out.result;
  }
  return { events, nativeIds, result: result ?? mapper.finish?.() };
}

const kinds = (events: DriverEvent[]) => events.map((e) => e.type);
const text = (events: DriverEvent[], type: 'ASSISTANT_DELTA' | 'REASONING_DELTA') =>
  events.filter((e) => e.type === type).map((e) => (e as { text: string }).text).join('');

describe('CLI output → HarnessEvents (captured runs of the real CLIs)', () => {
  it('claude-code stream-json: deltas from partial messages, whole blocks not repeated', () => {
    const { events, nativeIds, result } = replay(new StreamJsonMapper(true), 'claude-code.reasoning-streamed.jsonl');
    expect(nativeIds).toEqual(['11111111-2222-4333-8444-555555555555']);
    expect(text(events, 'REASONING_DELTA')).toBe('Reasoning about: REASON say hello there friend');
    expect(text(events, 'ASSISTANT_DELTA')).toBe('ECHO REASON say hello there friend');
    expect(result).toEqual({ ok: true, text: 'ECHO REASON say hello there friend', error: null });
  });

  it('claude-code: a tool call, its refused result, and the permission denial as an approval request', () => {
    const { events, result } = replay(new StreamJsonMapper(true), 'claude-code.permission-denial.jsonl');
    expect(kinds(events)).toEqual(['TOOL_USE', 'TOOL_RESULT', 'ASSISTANT_DELTA', 'APPROVAL_REQUEST']);
    const [use, res, , approval] = events as [
      Extract<DriverEvent, { type: 'TOOL_USE' }>,
      Extract<DriverEvent, { type: 'TOOL_RESULT' }>,
      unknown,
      Extract<DriverEvent, { type: 'APPROVAL_REQUEST' }>,
    ];
    expect(use).toMatchObject({ name: 'Bash', input: { command: 'curl -s http://127.0.0.1:8099/_keelson/health' } });
    expect(res).toMatchObject({ toolUseId: use.toolUseId, isError: true, output: 'This command requires approval' });
    expect(approval).toMatchObject({ requestId: use.toolUseId, toolName: 'Bash', input: use.input });
    expect(result?.ok).toBe(true);
    // Without approvals (qwen-code), denials are not requests.
    expect(kinds(replay(new StreamJsonMapper(false), 'claude-code.permission-denial.jsonl').events)).not.toContain('APPROVAL_REQUEST');
  });

  it('qwen-code stream-json: its own write tool, the result, the answer', () => {
    const { events, nativeIds, result } = replay(new StreamJsonMapper(false), 'qwen-code.write-file.jsonl');
    expect(nativeIds).toEqual(['22222222-2222-4333-8444-555555555555']);
    expect(kinds(events)).toEqual(['TOOL_USE', 'TOOL_RESULT', 'ASSISTANT_DELTA']);
    expect(events[0]).toMatchObject({ name: 'write_file', input: { file_path: '/tmp/hx/qwen/proj/notes/hello.txt', content: 'Hello world\n' } });
    expect(result).toMatchObject({ ok: true, text: 'DONE notes/hello.txt' });
  });

  it('codex exec --json: thread id, the file change as a tool call and result, the agent message', () => {
    const { events, nativeIds, result } = replay(new CodexMapper(), 'codex.write-file.jsonl');
    expect(nativeIds).toEqual(['01a22a62-79b1-7a51-a9c3-9463764bea45']);
    expect(kinds(events)).toEqual(['TOOL_USE', 'TOOL_RESULT', 'ASSISTANT_DELTA']);
    expect(events[0]).toMatchObject({ toolUseId: 'item_0', name: 'apply_patch', input: { changes: [{ path: '/tmp/hx/codex/proj/notes/hello.txt', kind: 'add' }] } });
    expect(events[1]).toMatchObject({ toolUseId: 'item_0', isError: false });
    expect(result).toEqual({ ok: true, text: 'DONE notes/hello.txt' });
    const failed = new CodexMapper();
    expect(failed.line({ type: 'turn.failed', error: { message: 'stream disconnected' } }).result).toEqual({ ok: false, text: null, error: 'stream disconnected' });
    expect(failed.line({ type: 'error', message: 'Reconnecting…' }).events).toEqual([{ type: 'HARNESS_ERROR', code: 'CLI_ERROR', message: 'Reconnecting…' }]);
  });

  it('pi --mode json: the session header, text deltas, tool execution start and end', () => {
    const { events, nativeIds, result } = replay(new PiMapper(), 'pi.write-file.jsonl');
    expect(nativeIds).toEqual(['01a22a62-ca86-7545-b22d-bb958e9d39ac']);
    expect(kinds(events)).toEqual(['TOOL_USE', 'TOOL_RESULT', 'ASSISTANT_DELTA', 'ASSISTANT_DELTA']);
    expect(events[0]).toMatchObject({ name: 'write', input: { path: 'notes/hello.txt', content: 'Hello world\n' } });
    expect(text(events, 'ASSISTANT_DELTA')).toBe('DONE notes/hello.txt');
    expect(result).toEqual({ ok: true, text: 'DONE notes/hello.txt' });
    const broken = new PiMapper();
    broken.line({ type: 'message_end', message: { role: 'assistant', content: [], stopReason: 'error', errorMessage: '500 boom' } });
    expect(broken.line({ type: 'agent_end' }).result).toMatchObject({ ok: false, error: '500 boom' });
  });

  it('opencode run --format json: sessionID on every line, the tool part as call and result, the outcome at the end', () => {
    const { events, nativeIds, result } = replay(new OpencodeMapper(), 'opencode.write-file.jsonl');
    expect(new Set(nativeIds)).toEqual(new Set(['ses_dd59cd19effeyN2L5LshjL9e1i']));
    expect(kinds(events)).toEqual(['TOOL_USE', 'TOOL_RESULT', 'ASSISTANT_DELTA']);
    expect(events[0]).toMatchObject({ name: 'write', input: { filePath: '/tmp/hx/oc/proj/notes/hello.txt' } });
    expect(result).toEqual({ ok: true, text: 'DONE notes/hello.txt', error: null });
  });

  it('cuts long text and tool inputs to the event limit, flagging it', () => {
    const m = new StreamJsonMapper(false);
    const out = m.line({ type: 'assistant', message: { id: 'm1', content: [{ type: 'text', text: 'x'.repeat(10_000) }, { type: 'tool_use', id: 't', name: 'Write', input: { content: 'y'.repeat(10_000) } }] } });
    expect(out.events[0]).toMatchObject({ type: 'ASSISTANT_DELTA', truncated: true });
    expect((out.events[0] as { text: string }).text.length).toBe(4096);
    expect(out.events[1]).toMatchObject({ type: 'TOOL_USE', truncated: true, input: { preview: expect.any(String) } });
  });
  it("turns qwen-code's ask_user_question into a PromptRequest per question, beside its ToolUse", () => {
    const ask = {
      type: 'assistant',
      message: {
        id: 'm2',
        content: [
          {
            type: 'tool_use',
            id: 'call_7',
            name: 'ask_user_question',
            input: {
              questions: [
                { question: 'Which color?', header: 'Color', options: [{ label: 'red', description: 'warm' }, { label: 'blue', description: 'cool' }] },
                { question: 'Which sizes?', header: 'Size', options: [{ label: 'S' }, { label: 'M' }], multiSelect: true },
                { header: 'no text' },
              ],
            },
          },
        ],
      },
    };
    const { events } = new StreamJsonMapper(false, 'ask_user_question').line(ask);
    expect(kinds(events)).toEqual(['TOOL_USE', 'PROMPT_REQUEST', 'PROMPT_REQUEST']);
    expect(events[1]).toEqual({
      type: 'PROMPT_REQUEST',
      promptId: 'call_7',
      question: 'Which color?',
      header: 'Color',
      options: [{ label: 'red', description: 'warm' }, { label: 'blue', description: 'cool' }],
      multiSelect: false,
    });
    expect(events[2]).toMatchObject({ promptId: 'call_7-2', question: 'Which sizes?', multiSelect: true, options: [{ label: 'S', description: null }, { label: 'M', description: null }] });
    // Without the prompt tool named (claude-code), the same call is only a ToolUse.
    expect(kinds(new StreamJsonMapper(true).line(ask).events)).toEqual(['TOOL_USE']);
  });
});
