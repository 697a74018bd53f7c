import { readChat } from '../test/support/answers';
import { fixture, opencodeTools, piTools, qwenTools } from '../test/support/cliRequests';
import { payloads, postJson, postSse } from '../test/support/http';
import { startModelServer, type ModelServer } from './index';

jest.setTimeout(30_000);

let server: ModelServer;
const auth = { authorization: 'Bearer whatever' };
const url = () => `${server.openaiBaseUrl}/chat/completions`;

type Chunk = { id: string; object: string; choices: Array<{ index: number; delta: Record<string, unknown>; finish_reason: string | null }>; usage?: unknown };

beforeAll(async () => {
  server = await startModelServer({ models: ['keelson-scripted', 'other-model'] });
});
afterAll(() => server?.stop());

describe('OpenAI Chat Completions API', () => {
  it('streams role, content deltas, finish_reason, the usage chunk and [DONE] with include_usage', async () => {
    const events = await postSse(url(), { model: 'm1', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi you' }] }, auth);
    expect(events.every((e) => e.event === undefined)).toBe(true);
    expect(events.at(-1)?.data).toBe('[DONE]');
    const chunks = payloads<Chunk>(events);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    expect(chunks.slice(1, -2).map((c) => c.choices[0].delta)).toEqual([{ content: 'ECHO ' }, { content: 'hi ' }, { content: 'you' }]);
    expect(chunks.at(-2)?.choices).toEqual([{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }]);
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number), total_tokens: expect.any(Number) } });
  });

  it('sends no usage chunk without stream_options.include_usage', async () => {
    const chunks = payloads<Chunk>(await postSse(url(), { model: 'm1', stream: true, messages: [{ role: 'user', content: 'hi' }] }, auth));
    expect(chunks.every((c) => c.choices.length === 1 && !('usage' in c))).toBe(true);
  });

  it('streams tool_calls deltas: id, type and name first, then argument pieces, finish_reason tool_calls', async () => {
    const body = { model: 'm1', stream: true, messages: [{ role: 'user', content: 'CALL_TOOL read {"path":"a/very/long/path/to/some/file.txt"}' }], tools: piTools };
    const events = await postSse(url(), body, auth);
    const chunks = payloads<Chunk>(events);
    const deltas = chunks.flatMap((c) => (c.choices[0]?.delta.tool_calls as Array<Record<string, unknown>> | undefined) ?? []);
    expect(deltas[0]).toEqual({ index: 0, id: expect.stringMatching(/^call_/), type: 'function', function: { name: 'read', arguments: '' } });
    expect(deltas.length).toBeGreaterThan(2);
    expect(deltas.slice(1).every((d) => Object.keys(d).join() === 'index,function')).toBe(true);
    const answer = readChat(events);
    expect(answer.stop).toBe('tool_calls');
    expect(JSON.parse(answer.calls[0].input)).toEqual({ path: 'a/very/long/path/to/some/file.txt' });
  });

  it('answers the non-streaming variant with a message, tool_calls and usage', async () => {
    const res = await postJson(url(), { model: 'm1', messages: [{ role: 'user', content: 'WRITE_FILE x.txt y' }], tools: opencodeTools }, auth);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toEqual({
      id: expect.stringMatching(/^chatcmpl-/),
      object: 'chat.completion',
      created: expect.any(Number),
      model: 'm1',
      system_fingerprint: null,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: null, refusal: null, tool_calls: [{ id: expect.stringMatching(/^call_/), type: 'function', function: { name: 'write', arguments: '{"filePath":"x.txt","content":"y\\n"}' } }] },
          logprobs: null,
          finish_reason: 'tool_calls',
        },
      ],
      usage: expect.objectContaining({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number), total_tokens: expect.any(Number) }),
    });
  });

  it('streams REASON as reasoning_content before the content', async () => {
    const answer = readChat(await postSse(url(), { model: 'm1', stream: true, messages: [{ role: 'user', content: 'REASON now' }] }, auth));
    expect(answer).toMatchObject({ reasoning: 'Reasoning about: REASON now', text: 'ECHO REASON now' });
  });

  it("answers opencode's title request with a short plain title, not the marker's tool call", async () => {
    const body = {
      model: 'm1',
      stream: true,
      messages: [
        { role: 'system', content: 'You are a title generator. You output ONLY a thread title. Nothing else.' },
        { role: 'user', content: 'Generate a title for this conversation:\n' },
        { role: 'user', content: '"WRITE_FILE notes.txt hello"' },
      ],
    };
    expect(readChat(await postSse(url(), body, auth))).toMatchObject({ text: 'Scripted session', calls: [] });
    expect(server.requests().at(-1)).toMatchObject({ decidedBy: 'side:title', side: true });
  });

  it("answers qwen-code's memory extraction agent with a short text, though it offers write tools", async () => {
    const q = fixture('qwen-code').first('WRITE_FILE a.txt b', '/repo') as { messages: unknown[] };
    const body = {
      ...q,
      messages: [
        { role: 'system', content: 'You are now acting as the managed memory extraction subagent for an AI coding assistant.' },
        ...q.messages.slice(1),
        { role: 'assistant', content: 'DONE a.txt' },
        { role: 'user', content: 'Managed memory has TWO directories. Choose which one to write each memory into.' },
      ],
      tools: qwenTools,
    };
    expect(readChat(await postSse(url(), body, auth))).toMatchObject({ text: 'Nothing to save.', calls: [] });
    expect(server.requests().at(-1)).toMatchObject({ decidedBy: 'side:memory', side: true });
  });

  it('lists the configured models', async () => {
    const res = await fetch(`${server.openaiBaseUrl}/models`, { headers: auth });
    expect(await res.json()).toEqual({
      object: 'list',
      data: [
        { id: 'keelson-scripted', object: 'model', created: expect.any(Number), owned_by: 'keelson' },
        { id: 'other-model', object: 'model', created: expect.any(Number), owned_by: 'keelson' },
      ],
    });
  });

  it('rejects a request without messages with an OpenAI error body', async () => {
    const res = await postJson(url(), { model: 'm1' }, auth);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: { message: expect.stringContaining('body.messages'), type: 'invalid_request_error', param: null, code: null } });
  });
});
