import { gzipSync } from 'node:zlib';
import { postJson, postSse } from '../test/support/http';
import { startModelServer, type ModelServer, type RecordedRequest } from './index';

jest.setTimeout(30_000);

let server: ModelServer;

beforeAll(async () => {
  server = await startModelServer({ logLimit: 3 });
});
afterAll(() => server?.stop());
beforeEach(() => server.clear());

describe('the request log', () => {
  it('records method, path with query, headers without secrets, body and how the script answered', async () => {
    const body = { model: 'c', max_tokens: 5, stream: true, messages: [{ role: 'user', content: 'hello log' }] };
    await postSse(`${server.url}/v1/messages?beta=true`, body, { 'x-api-key': 'sk-ant-secret', authorization: 'Bearer sk-secret', 'anthropic-version': '2023-06-01' });
    const [entry] = server.requests();
    expect(entry).toEqual({
      seq: expect.any(Number),
      at: expect.any(String),
      method: 'POST',
      path: '/v1/messages?beta=true',
      headers: expect.objectContaining({ 'x-api-key': '[redacted]', authorization: '[redacted]', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }),
      body,
      api: 'anthropic',
      status: 200,
      userText: 'hello log',
      toolRounds: 0,
      decidedBy: 'default:echo',
      side: false,
      toolCalls: [],
    });
    expect(JSON.stringify(server.requests())).not.toContain('secret');
  });

  it('records probes and unknown routes too, keeps only the newest entries, and serves them over HTTP', async () => {
    await fetch(`${server.url}/`, { method: 'HEAD' });
    await fetch(`${server.openaiBaseUrl}/models`);
    await postJson(`${server.openaiBaseUrl}/embeddings`, { input: 'x' });
    await fetch(`${server.url}/nowhere`);
    const entries = server.requests();
    expect(entries.map((e) => [e.method, e.path, e.api, e.status])).toEqual([
      ['GET', '/v1/models', 'models', 200],
      ['POST', '/v1/embeddings', 'embeddings', 200],
      ['GET', '/nowhere', undefined, 404],
    ]);
    const http = (await (await fetch(`${server.url}/_keelson/requests`)).json()) as { requests: RecordedRequest[] };
    expect(http.requests).toEqual(entries);
    const since = (await (await fetch(`${server.url}/_keelson/requests?since=${entries[1].seq}`)).json()) as { requests: RecordedRequest[] };
    expect(since.requests.map((e) => e.path)).toEqual(['/nowhere']);
  });

  it('is emptied by clear() and by DELETE /_keelson/requests, and never records its own control routes', async () => {
    await fetch(`${server.url}/`, { method: 'HEAD' });
    server.clear();
    expect(server.requests()).toEqual([]);
    await fetch(`${server.url}/`, { method: 'HEAD' });
    await fetch(`${server.url}/_keelson/requests`, { method: 'DELETE' });
    await fetch(`${server.url}/_keelson/health`);
    expect(server.requests()).toEqual([]);
  });
});

describe('request bodies', () => {
  it('reads gzip-encoded bodies', async () => {
    const body = { model: 'm', messages: [{ role: 'user', content: 'zipped' }] };
    const res = await fetch(`${server.openaiBaseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(JSON.stringify(body)),
    });
    expect(((await res.json()) as { choices: Array<{ message: { content: string } }> }).choices[0].message.content).toBe('ECHO zipped');
    expect(server.requests().at(-1)?.body).toEqual(body);
  });

  it('answers a body that is not JSON with a 400 in the protocol\'s shape, and records it', async () => {
    const res = await fetch(`${server.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":' });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining('not valid JSON') } });
    expect(server.requests().at(-1)).toMatchObject({ method: 'POST', path: '/v1/messages', status: 400, body: undefined });
  });
});

describe('binding', () => {
  it('refuses any address but loopback', async () => {
    await expect(startModelServer({ host: '0.0.0.0' })).rejects.toThrow(/refusing to bind 0\.0\.0\.0.*loopback only/);
  });

  it('serves on IPv6 loopback with a bracketed URL', async () => {
    const v6 = await startModelServer({ host: '::1' });
    try {
      expect(v6.url).toMatch(/^http:\/\/\[::1\]:\d+$/);
      expect(v6.openaiBaseUrl).toBe(`${v6.url}/v1`);
      expect((await fetch(`${v6.url}/_keelson/health`)).status).toBe(200);
    } finally {
      await v6.stop();
    }
  });
});
