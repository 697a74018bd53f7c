import { readResponses } from '../test/support/answers';
import { codexTools, fixture } from '../test/support/cliRequests';
import { collapsed, payloads, postJson, postSse, type SseEvent } from '../test/support/http';
import { startModelServer, type ModelServer } from './index';

jest.setTimeout(30_000);

let server: ModelServer;
const auth = { authorization: 'Bearer whatever' };
const url = () => `${server.openaiBaseUrl}/responses`;

type Event = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function request(text: string, extra: Record<string, unknown> = {}) {
  return { model: 'gpt-5.5', stream: true, input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text }] }], ...extra };
}

/** Every event names its type twice (SSE `event:` and JSON `type`) and numbers itself from 0. */
function expectWellFormed(events: SseEvent[]): Event[] {
  const parsed = payloads<Event>(events);
  expect(events.map((e) => e.event)).toEqual(parsed.map((p) => p.type));
  expect(parsed.map((p) => p.sequence_number)).toEqual(parsed.map((_, i) => i));
  return parsed;
}

beforeAll(async () => {
  server = await startModelServer();
});
afterAll(() => server?.stop());

describe('OpenAI Responses API', () => {
  it('streams a message: created, in_progress, item and content part added, text deltas, done events, completed', async () => {
    const events = await postSse(url(), request('hello codex'), auth);
    const parsed = expectWellFormed(events);
    expect(collapsed(parsed.map((p) => p.type))).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const [created, , added, partAdded] = parsed;
    expect(created.response).toMatchObject({ id: expect.stringMatching(/^resp_/), object: 'response', status: 'in_progress', model: 'gpt-5.5', output: [], usage: null });
    expect(added).toEqual({
      type: 'response.output_item.added',
      sequence_number: 2,
      output_index: 0,
      item: { id: expect.stringMatching(/^msg_/), type: 'message', status: 'in_progress', content: [], role: 'assistant' },
    });
    expect(partAdded).toEqual({
      type: 'response.content_part.added',
      sequence_number: 3,
      item_id: added.item.id,
      output_index: 0,
      content_index: 0,
      part: { type: 'output_text', annotations: [], logprobs: [], text: '' },
    });
    const deltas = parsed.filter((p) => p.type === 'response.output_text.delta');
    expect(deltas.map((d) => d.delta).join('')).toBe('ECHO hello codex');
    expect(deltas.every((d) => d.item_id === added.item.id && d.output_index === 0 && d.content_index === 0)).toBe(true);
    const done = parsed.find((p) => p.type === 'response.output_item.done');
    expect(done?.item).toEqual({ id: added.item.id, type: 'message', status: 'completed', content: [{ type: 'output_text', annotations: [], logprobs: [], text: 'ECHO hello codex' }], role: 'assistant' });
    const completed = parsed.at(-1) as Event;
    expect(completed.response).toMatchObject({ id: created.response.id, status: 'completed', output: [done?.item] });
    expect(completed.response.usage).toEqual({
      input_tokens: expect.any(Number),
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: expect.any(Number),
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: completed.response.usage.input_tokens + completed.response.usage.output_tokens,
    });
  });

  it("streams codex's freeform apply_patch as a custom_tool_call with input deltas", async () => {
    const events = await postSse(url(), request('WRITE_FILE docs/readme.md line one\nline two', { tools: codexTools }), auth);
    const parsed = expectWellFormed(events);
    expect(collapsed(parsed.map((p) => p.type))).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.custom_tool_call_input.delta',
      'response.custom_tool_call_input.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const patch = '*** Begin Patch\n*** Add File: docs/readme.md\n+line one\n+line two\n*** End Patch';
    const added = parsed[2];
    expect(added.item).toEqual({ id: expect.stringMatching(/^ctc_/), type: 'custom_tool_call', status: 'in_progress', call_id: expect.stringMatching(/^call_/), input: '', name: 'apply_patch' });
    expect(parsed.filter((p) => p.type === 'response.custom_tool_call_input.delta').map((p) => p.delta).join('')).toBe(patch);
    expect(parsed.find((p) => p.type === 'response.custom_tool_call_input.done')).toEqual({
      type: 'response.custom_tool_call_input.done',
      sequence_number: expect.any(Number),
      item_id: added.item.id,
      output_index: 0,
      input: patch,
    });
    expect(parsed.find((p) => p.type === 'response.output_item.done')?.item).toEqual({ ...added.item, status: 'completed', input: patch });
  });

  it('streams a function call as function_call_arguments deltas and done', async () => {
    const events = await postSse(url(), request('CALL_TOOL exec_command {"cmd":"cat notes/hello.txt"}', { tools: codexTools }), auth);
    const parsed = expectWellFormed(events);
    expect(collapsed(parsed.map((p) => p.type))).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const args = '{"cmd":"cat notes/hello.txt"}';
    expect(parsed[2].item).toEqual({ id: expect.stringMatching(/^fc_/), type: 'function_call', status: 'in_progress', arguments: '', call_id: expect.stringMatching(/^call_/), name: 'exec_command' });
    expect(parsed.find((p) => p.type === 'response.function_call_arguments.done')).toMatchObject({ item_id: parsed[2].item.id, output_index: 0, arguments: args });
    expect(readResponses(events).calls).toEqual([{ id: parsed[2].item.call_id, name: 'exec_command', input: args }]);
  });

  it('answers a custom_tool_call_output with the final message', async () => {
    const f = fixture('codex');
    const first = f.first('WRITE_FILE a.txt x', '/repo');
    const [call] = readResponses(await postSse(url(), first, auth)).calls;
    const answer = readResponses(await postSse(url(), f.followUp(first, call, 'Success. Updated the following files:\nA a.txt\n'), auth));
    expect(answer).toMatchObject({ text: 'DONE a.txt', calls: [], stop: 'completed' });
  });

  it('streams REASON as a reasoning item with summary events before the message', async () => {
    const events = await postSse(url(), request('REASON please'), auth);
    const parsed = expectWellFormed(events);
    expect(collapsed(parsed.map((p) => p.type)).slice(2, 9)).toEqual([
      'response.output_item.added',
      'response.reasoning_summary_part.added',
      'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.done',
      'response.reasoning_summary_part.done',
      'response.output_item.done',
      'response.output_item.added',
    ]);
    expect(parsed.find((p) => p.type === 'response.output_item.done')?.item).toEqual({
      id: expect.stringMatching(/^rs_/),
      type: 'reasoning',
      summary: [{ type: 'summary_text', text: 'Reasoning about: REASON please' }],
    });
    const answer = readResponses(events);
    expect(answer).toMatchObject({ reasoning: 'Reasoning about: REASON please', text: 'ECHO REASON please' });
    expect((answer.usage as { output_tokens_details: { reasoning_tokens: number } }).output_tokens_details.reasoning_tokens).toBeGreaterThan(0);
  });

  it('accepts a plain string input and answers the non-streaming variant with the response object', async () => {
    const res = await postJson(url(), { model: 'gpt-5.5', input: 'just text', instructions: 'Be brief.' }, auth);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Event;
    expect(body).toMatchObject({
      object: 'response',
      status: 'completed',
      instructions: 'Be brief.',
      output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'ECHO just text' }] }],
      usage: { input_tokens: expect.any(Number), output_tokens: expect.any(Number), total_tokens: expect.any(Number) },
    });
  });

  it('rejects a request without input', async () => {
    const res = await postJson(url(), { model: 'gpt-5.5' }, auth);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: { message: expect.stringContaining('body.input'), type: 'invalid_request_error', param: null, code: null } });
  });
});
