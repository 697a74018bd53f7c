import { readAnthropic } from '../test/support/answers';
import { claudeCodeTools } from '../test/support/cliRequests';
import { collapsed, payloads, postJson, postSse } from '../test/support/http';
import { startModelServer, type ModelServer } from './index';

jest.setTimeout(30_000);

let server: ModelServer;
const headers = { 'x-api-key': 'any-value-at-all', 'anthropic-version': '2023-06-01' };
const messagesUrl = () => `${server.anthropicBaseUrl}/v1/messages?beta=true`;

function request(text: string, extra: Record<string, unknown> = {}) {
  return { model: 'claude-sonnet-4-5', max_tokens: 1024, stream: true, messages: [{ role: 'user', content: text }], ...extra };
}

beforeAll(async () => {
  server = await startModelServer();
});
afterAll(() => server?.stop());

describe('Anthropic Messages API', () => {
  it('streams a text reply as message_start, one text block with a ping, message_delta and message_stop', async () => {
    const events = await postSse(messagesUrl(), request('hello there'), headers);
    expect(events.every((e) => JSON.parse(e.data).type === e.event)).toBe(true);
    expect(collapsed(events.map((e) => e.event))).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const [start, block] = payloads(events);
    expect(start).toMatchObject({
      type: 'message_start',
      message: { type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: null, usage: { input_tokens: expect.any(Number) } },
    });
    expect(String((start.message as { id: string }).id)).toMatch(/^msg_/);
    expect(block).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    const answer = readAnthropic(events);
    expect(answer).toMatchObject({ text: 'ECHO hello there', stop: 'end_turn', calls: [] });
    expect(answer.usage).toEqual({ input_tokens: expect.any(Number), cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: expect.any(Number) });
  });

  it('answers the non-streaming variant with one JSON message', async () => {
    const res = await postJson(messagesUrl(), request('plain please', { stream: false }), headers);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      id: expect.stringMatching(/^msg_/),
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [{ type: 'text', text: 'ECHO plain please' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: expect.any(Number), cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: expect.any(Number) },
    });
  });

  it('streams a tool call as a tool_use block of input_json_delta parts, stop_reason tool_use', async () => {
    const body = request('WRITE_FILE src/a.ts export {};', {
      system: 'Here is useful information about the environment you are running in:\n<env>\nWorking directory: /repo\n</env>',
      tools: claudeCodeTools,
    });
    const events = await postSse(messagesUrl(), body, headers);
    expect(collapsed(events.map((e) => e.event))).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const start = payloads(events).find((p) => p.type === 'content_block_start');
    expect(start).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'Write', input: {} } });
    const answer = readAnthropic(events);
    expect(answer.stop).toBe('tool_use');
    expect(JSON.parse(answer.calls[0].input)).toEqual({ file_path: '/repo/src/a.ts', content: 'export {};\n' });
  });

  it('answers the non-streaming tool call with a parsed input object', async () => {
    const res = await postJson(messagesUrl(), request('CALL_TOOL TodoWrite {"todos":[]}', { stream: false, tools: claudeCodeTools }), headers);
    const body = (await res.json()) as { content: unknown[]; stop_reason: string };
    expect(body.stop_reason).toBe('tool_use');
    expect(body.content).toEqual([{ type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'TodoWrite', input: { todos: [] } }]);
  });

  it('emits a thinking block with its signature first for REASON', async () => {
    const events = await postSse(messagesUrl(), request('REASON about it'), headers);
    const blocks = payloads(events).filter((p) => p.type === 'content_block_start');
    expect(blocks.map((b) => (b.content_block as { type: string }).type)).toEqual(['thinking', 'text']);
    const deltas = payloads(events).filter((p) => p.type === 'content_block_delta' && p.index === 0).map((p) => (p.delta as { type: string }).type);
    expect(collapsed(deltas)).toEqual(['thinking_delta', 'signature_delta']);
    expect(readAnthropic(events)).toMatchObject({ reasoning: 'Reasoning about: REASON about it', text: 'ECHO REASON about it' });
  });

  it('reads the last real user text past system-reminder blocks, and tool results after it', async () => {
    const messages = [
      { role: 'user', content: [{ type: 'text', text: '<system-reminder>context</system-reminder>' }, { type: 'text', text: 'CALL_TOOL Bash {"command":"pwd"}' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'pwd' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: '/repo' }] }, { type: 'text', text: '<system-reminder>later</system-reminder>' }] },
    ];
    const answer = readAnthropic(await postSse(messagesUrl(), request('', { messages, tools: claudeCodeTools }), headers));
    expect(answer).toMatchObject({ text: 'DONE Bash: /repo', stop: 'end_turn' });
  });

  it('answers HEAD / with a 404, as claude-code expects of its probe', async () => {
    const res = await fetch(`${server.url}/`, { method: 'HEAD' });
    expect(res.status).toBe(404);
  });

  it('counts tokens', async () => {
    const res = await postJson(`${server.url}/v1/messages/count_tokens?beta=true`, request('count me'), headers);
    expect(await res.json()).toEqual({ input_tokens: expect.any(Number) });
  });

  it('rejects a request without messages with an invalid_request_error naming the field', async () => {
    const res = await postJson(messagesUrl(), { model: 'm', max_tokens: 1 }, headers);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringContaining('body.messages') },
      request_id: expect.stringMatching(/^req_/),
    });
  });
});
