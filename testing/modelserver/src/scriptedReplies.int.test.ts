import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readAnthropic, readChat } from '../test/support/answers';
import { claudeCodeTools, fixture, piTools } from '../test/support/cliRequests';
import { parseSse, postJson, postSse } from '../test/support/http';
import { startModelServer, type ModelServer, type Rule } from './index';

jest.setTimeout(30_000);

const dir = mkdtempSync(join(tmpdir(), 'keelson-model-script-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function chat(text: string, extra: Record<string, unknown> = {}) {
  return { model: 'm', stream: true, messages: [{ role: 'user', content: text }], ...extra };
}

async function chatText(server: ModelServer, text: string, extra: Record<string, unknown> = {}): Promise<string> {
  return readChat(await postSse(`${server.openaiBaseUrl}/chat/completions`, chat(text, extra))).text;
}

describe('scripted rules', () => {
  let server: ModelServer;
  afterEach(() => server?.stop());

  it('answers from embedder rules first, substituting regex groups, then falls through to the markers', async () => {
    const rules: Rule[] = [
      { name: 'greet', match: { contains: 'hello' }, reply: { text: 'Hi there' } },
      { name: 'order', match: { regex: '^order (\\w+) x(\\d+)$' }, reply: { text: 'ordered $2 of $1 ($&)' } },
      { name: 'anthropic only', match: { contains: 'which api', protocol: 'anthropic' }, reply: { text: 'messages' } },
    ];
    server = await startModelServer({ rules });
    expect(await chatText(server, 'well hello')).toBe('Hi there');
    expect(await chatText(server, 'order tea x3')).toBe('ordered 3 of tea (order tea x3)');
    expect(await chatText(server, 'which api')).toBe('ECHO which api');
    const anthropic = readAnthropic(await postSse(`${server.url}/v1/messages`, { model: 'c', max_tokens: 9, stream: true, messages: [{ role: 'user', content: 'which api' }] }));
    expect(anthropic.text).toBe('messages');
    expect(server.requests().map((r) => r.decidedBy)).toEqual(['greet', 'order', 'default:echo', 'anthropic only']);
  });

  it('plays a list of steps, one per round of tool results, then ends with DONE', async () => {
    const rules: Rule[] = [
      {
        name: 'two tools',
        match: { contains: 'survey' },
        reply: [{ text: 'Looking first.', toolCall: { name: 'bash', arguments: { command: 'ls' } } }, { toolCall: { name: 'read', arguments: { path: 'a.txt' } } }],
      },
    ];
    server = await startModelServer({ rules });
    const pi = fixture('pi');
    const first = pi.first('survey', '/repo');
    const step0 = readChat(await postSse(`${server.url}${pi.path}`, first));
    expect(step0.text).toBe('Looking first.');
    expect(step0.calls.map((c) => c.name)).toEqual(['bash']);
    const second = pi.followUp(first, step0.calls[0], 'a.txt');
    const step1 = readChat(await postSse(`${server.url}${pi.path}`, second));
    expect(step1.calls.map((c) => [c.name, JSON.parse(c.input)])).toEqual([['read', { path: 'a.txt' }]]);
    const step2 = readChat(await postSse(`${server.url}${pi.path}`, pi.followUp(second, step1.calls[0], 'contents of a')));
    expect(step2).toMatchObject({ text: 'DONE read: contents of a', calls: [] });
  });

  it('lets a function rule read the conversation, and decline', async () => {
    const rules: Rule[] = [
      { name: 'cwd', reply: (ctx) => (ctx.userText === 'where' ? { text: `in ${ctx.cwd} with ${ctx.tools.length} tools` } : undefined) },
    ];
    server = await startModelServer({ rules });
    expect(await chatText(server, 'where', { messages: [{ role: 'system', content: 'Current working directory: /srv/p' }, { role: 'user', content: 'where' }], tools: piTools })).toBe(
      'in /srv/p with 4 tools',
    );
    expect(await chatText(server, 'elsewhere')).toBe('ECHO elsewhere');
  });

  it('shows a function rule the earlier user turns of a resumed conversation', async () => {
    const rules: Rule[] = [{ name: 'recall', reply: (ctx) => ({ text: `now ${ctx.userText}; before ${ctx.earlierUserTexts.join(' | ') || 'nothing'}` }) }];
    server = await startModelServer({ rules });
    const messages = [
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'second' },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'third' },
    ];
    expect(await chatText(server, '', { messages })).toBe('now third; before first | second');
    expect(await chatText(server, 'alone')).toBe('now alone; before nothing');
  });

  it('replaces its rules through setRules and PUT /_keelson/rules', async () => {
    server = await startModelServer({ rules: [{ match: { contains: 'x' }, reply: { text: 'one' } }] });
    server.setRules([{ match: { contains: 'x' }, reply: { text: 'two' } }]);
    expect(await chatText(server, 'x')).toBe('two');
    const res = await fetch(`${server.url}/_keelson/rules`, { method: 'PUT', body: JSON.stringify([{ match: { contains: 'x' }, reply: { text: 'three' } }]) });
    expect(await res.json()).toEqual({ rules: 1 });
    expect(await chatText(server, 'x')).toBe('three');
    const bad = await fetch(`${server.url}/_keelson/rules`, { method: 'PUT', body: JSON.stringify([{ reply: { txt: 'typo' } }]) });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(/rules\.0\.reply/);
  });

  it('reads a JSON script file, and follows edits to it without a restart', async () => {
    const path = join(dir, 'script.json');
    writeFileSync(path, JSON.stringify({ rules: [{ name: 'from file', match: { regex: '^ping$' }, reply: { text: 'pong' } }] }));
    server = await startModelServer({ scriptPath: path, rules: [{ match: { contains: 'ping' }, reply: { text: 'embedder first' } }] });
    expect(await chatText(server, 'ping')).toBe('embedder first');
    server.setRules([]);
    expect(await chatText(server, 'ping')).toBe('pong');
    writeFileSync(path, JSON.stringify([{ match: { regex: '^ping$' }, reply: [{ writeFile: { path: 'p.txt', content: 'pinged' } }] }]));
    // mtime resolution: make sure the edit is seen as a change.
    const later = new Date(Date.now() + 2000);
    utimesSync(path, later, later);
    const answer = readChat(await postSse(`${server.openaiBaseUrl}/chat/completions`, chat('ping', { tools: piTools })));
    expect(answer.calls.map((c) => [c.name, JSON.parse(c.input)])).toEqual([['write', { path: 'p.txt', content: 'pinged\n' }]]);
  });

  it('refuses to start on an invalid script file, naming the field', async () => {
    const path = join(dir, 'bad.json');
    writeFileSync(path, JSON.stringify([{ match: { regex: '(' }, reply: { text: 'x' } }]));
    await expect(startModelServer({ scriptPath: path })).rejects.toThrow(/bad\.json is invalid: rules\.0\.match\.regex: not a valid regular expression/);
  });

  it('answers FAIL_HTTP with the status and each protocol\'s error body', async () => {
    server = await startModelServer();
    const chatRes = await postJson(`${server.openaiBaseUrl}/chat/completions`, chat('FAIL_HTTP 429 slow down'));
    expect(chatRes.status).toBe(429);
    expect(await chatRes.json()).toEqual({ error: { message: 'slow down', type: 'rate_limit_exceeded', param: null, code: 'rate_limit_exceeded' } });
    const msgRes = await postJson(`${server.url}/v1/messages`, { model: 'c', max_tokens: 1, messages: [{ role: 'user', content: 'FAIL_HTTP 529' }] });
    expect(msgRes.status).toBe(529);
    expect(await msgRes.json()).toMatchObject({ type: 'error', error: { type: 'overloaded_error', message: 'scripted failure 529' } });
  });

  it('reports CALL_TOOL of a tool that is not offered in text, and finds MCP-prefixed tools by their short name', async () => {
    server = await startModelServer();
    const tools = [...claudeCodeTools, { name: 'mcp__keelson__run_status', description: 'status', input_schema: { type: 'object', properties: { runId: { type: 'string' } } } }];
    const url = `${server.url}/v1/messages`;
    const missing = readAnthropic(await postSse(url, { model: 'c', max_tokens: 1024, stream: true, tools, messages: [{ role: 'user', content: 'CALL_TOOL nope {}' }] }));
    expect(missing.calls).toEqual([]);
    expect(missing.text).toBe('CALL_TOOL: no tool named nope among: Bash, Read, Edit, Write, TodoWrite, mcp__keelson__run_status');
    const found = readAnthropic(await postSse(url, { model: 'c', max_tokens: 1024, stream: true, tools, messages: [{ role: 'user', content: 'CALL_TOOL run_status {"runId":"r1"}' }] }));
    expect(found.calls.map((c) => [c.name, JSON.parse(c.input)])).toEqual([['mcp__keelson__run_status', { runId: 'r1' }]]);
  });
});

describe('SLOW', () => {
  let server: ModelServer;
  beforeAll(async () => {
    server = await startModelServer();
  });
  afterAll(() => server?.stop());

  it('streams the first delta at once and spreads the rest over the given time', async () => {
    const started = Date.now();
    const res = await postJson(`${server.openaiBaseUrl}/chat/completions`, chat('SLOW 1200 one two three four'));
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    let firstDeltaAt: number | undefined;
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      text += decoder.decode(chunk.value, { stream: true });
      if (firstDeltaAt === undefined && text.includes('"content":"ECHO ')) firstDeltaAt = Date.now() - started;
    }
    const total = Date.now() - started;
    expect(firstDeltaAt).toBeLessThan(600);
    expect(total).toBeGreaterThanOrEqual(1150);
    expect(readChat(parseSse(text)).text).toBe('ECHO SLOW 1200 one two three four');
  });

  it('stops streaming when the client goes away (an interrupted turn)', async () => {
    const ac = new AbortController();
    const res = await postJson(`${server.openaiBaseUrl}/chat/completions`, chat('SLOW 60000 a long answer'), {}, ac.signal);
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('"role":"assistant"');
    ac.abort();
    await expect(reader.read()).rejects.toThrow();
    // The server is free at once for the next turn.
    expect(await chatText(server, 'next')).toBe('ECHO next');
  });
});
