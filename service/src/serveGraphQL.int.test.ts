import { request } from 'node:http';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { ApolloServer } from '@apollo/server';
import { MeshError, type Caller } from '@keelson/schema';
import { loopbackOnly } from './auth/accessPolicy';
import { silentLogger } from './logger';
import WebSocket from 'ws';
import { serveGraphQL, type Served } from './serveGraphQL';

const caller: Caller = { subject: 'test', kind: 'service', scopes: ['read'] };
let served: Served;
/** The sizes of the WebSocket messages the server's handler was given. */
const wsReceived: number[] = [];
let base: string;

beforeAll(async () => {
  const apollo = new ApolloServer({
    typeDefs: 'type Query { echo(text: String!): String! size(text: String!): Int! }',
    resolvers: { Query: { echo: (_: unknown, { text }: { text: string }) => text, size: (_: unknown, { text }: { text: string }) => text.length } },
  });
  served = await serveGraphQL({
    name: 'test',
    host: '127.0.0.1',
    port: 0,
    auth: 'on',
    access: loopbackOnly,
    authenticate: async () => caller,
    apollo,
    context: async () => ({}),
    maxBodyBytes: 64 * 1024,
    log: silentLogger(),
    websocket: (wss) => {
      wss.on('connection', (client) => {
        client.on('message', (data: Buffer) => wsReceived.push(data.length));
        // ws reports the oversized frame as an error on the socket before closing it with 1009 (graphql-ws's handler logs it).
        client.on('error', () => undefined);
      });
      return () => undefined;
    },
  });
  base = `http://127.0.0.1:${served.port}`;
});
afterAll(() => served.stop());

/** One HTTP exchange on a fresh connection: status and body text. */
function exchange(method: string, path: string, body?: Buffer | string, headers: Record<string, string> = {}): Promise<{ status: number; text: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method, headers: { 'content-type': 'application/json', ...headers }, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const post = (query: string, variables: Record<string, unknown> = {}, path = '/graphql') => exchange('POST', path, JSON.stringify({ query, variables }));

describe('serveGraphQL over node:http', () => {
  it('closes a WebSocket whose frame is above the body limit (1009) before any handler reads it; smaller frames arrive', async () => {
    const socket = new WebSocket(`${base.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    socket.send(Buffer.alloc(1000, 'a'));
    for (const deadline = Date.now() + 5000; wsReceived.length === 0 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 10));
    expect(wsReceived).toEqual([1000]);
    const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
    socket.send(Buffer.alloc(64 * 1024 + 1, 'b'));
    expect(await closed).toBe(1009);
    expect(wsReceived).toEqual([1000]);
  });


  it('answers a POST in one body with its length, a body sent in many chunks alike, and multi-byte text intact', async () => {
    const one = await post('query($t: String!) { echo(text: $t) }', { t: 'ünïcødé ✓' });
    expect(one.status).toBe(200);
    expect(JSON.parse(one.text)).toEqual({ data: { echo: 'ünïcødé ✓' } });
    expect(one.headers['content-length']).toBe(String(Buffer.byteLength(one.text)));
    expect(one.headers['transfer-encoding']).toBeUndefined();

    // The same body dribbled byte by byte (a multi-byte character split across chunks).
    const text = 'ä'.repeat(3000);
    const payload = Buffer.from(JSON.stringify({ query: 'query($t: String!) { size(text: $t) }', variables: { t: text } }));
    const answer = await new Promise<string>((resolve, reject) => {
      const req = request(`${base}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, agent: false }, (res) => {
        let out = '';
        res.on('data', (c: Buffer) => (out += c.toString()));
        res.on('end', () => resolve(out));
      });
      req.on('error', reject);
      for (let i = 0; i < payload.length; i += 7) req.write(payload.subarray(i, i + 7));
      req.end();
    });
    expect(JSON.parse(answer)).toEqual({ data: { size: 3000 } });
  });

  it('reads a gzip body, refuses one past the limit after decompression (413), an unknown encoding (415) and broken JSON (400)', async () => {
    const zipped = await exchange('POST', '/graphql', gzipSync(JSON.stringify({ query: '{ echo(text: "z") }' })), { 'content-encoding': 'gzip' });
    expect(JSON.parse(zipped.text)).toEqual({ data: { echo: 'z' } });

    const bomb = await exchange('POST', '/graphql', gzipSync(Buffer.alloc(1024 * 1024, ' ')), { 'content-encoding': 'gzip' });
    expect(bomb.status).toBe(413);
    expect(JSON.parse(bomb.text).errors[0].message).toBe('request body exceeds 65536 bytes (after decompression)');
    const large = await exchange('POST', '/graphql', Buffer.alloc(100 * 1024, ' '));
    expect(large.status).toBe(413);

    const corrupt = await exchange('POST', '/graphql', Buffer.from('not gzip at all'), { 'content-encoding': 'gzip' });
    expect(corrupt.status).toBe(400);
    expect(JSON.parse(corrupt.text).errors[0].message).toMatch(/^request body could not be read/);

    const odd = await exchange('POST', '/graphql', 'x', { 'content-encoding': 'zstd-ish' });
    expect(odd.status).toBe(415);
    const broken = await exchange('POST', '/graphql', '{"query": ');
    expect(broken.status).toBe(400);
    expect(JSON.parse(broken.text).errors[0].message).toBe('request body is not valid JSON');
  });

  it('keeps serving after a client leaves in the middle of a body', async () => {
    await new Promise<void>((resolve, reject) => {
      const socket = connect(served.port, '127.0.0.1', () => {
        socket.write(`POST /graphql HTTP/1.1\r\nhost: 127.0.0.1:${served.port}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"query":`);
        setTimeout(() => {
          socket.destroy();
          resolve();
        }, 50);
      });
      socket.on('error', reject);
    });
    const after = await post('{ echo(text: "still here") }');
    expect(JSON.parse(after.text)).toEqual({ data: { echo: 'still here' } });
  });

  it('routes by path as the URL parser reads it: query strings, dot segments and escapes; 404 elsewhere', async () => {
    const get = await exchange('GET', `/graphql?query=${encodeURIComponent('{ echo(text: "via GET") }')}`, undefined, { 'apollo-require-preflight': 'true' });
    expect(JSON.parse(get.text)).toEqual({ data: { echo: 'via GET' } });
    const dotted = await post('{ echo(text: "dots") }', {}, '/other/../graphql');
    expect(JSON.parse(dotted.text)).toEqual({ data: { echo: 'dots' } });
    const escaped = await post('{ echo(text: "escaped") }', {}, '/graph%71l');
    expect(escaped.status).toBe(404);
    expect(JSON.parse(escaped.text).errors[0].message).toBe('no route /graph%71l; GraphQL is served at /graphql');
    const elsewhere = await post('{ echo(text: "x") }', {}, '/graphql/');
    expect(elsewhere.status).toBe(404);
    const metrics = await exchange('GET', '/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.text).toContain('keelson_graphql_requests_total');
  });
});

describe('GET /metrics', () => {
  it("answers only a reader: 401 without a credential, 403 without the read scope, the registry's operation names otherwise", async () => {
    const callers: Record<string, Caller> = {
      reader: { subject: 'token:scraper', kind: 'token', scopes: ['read'] },
      none: { subject: 'jwt:x', kind: 'jwt', scopes: [] },
    };
    const guarded = await serveGraphQL({
      name: 'guarded',
      host: '127.0.0.1',
      port: 0,
      auth: 'on',
      access: loopbackOnly,
      authenticate: async () => caller,
      metricsAuthenticate: async (req) => {
        const who = /^Bearer (\w+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
        if (!who || !callers[who]) throw new MeshError('UNAUTHENTICATED', 'authentication required');
        return callers[who];
      },
      apollo: new ApolloServer({ typeDefs: 'type Query { ok: Boolean }', resolvers: { Query: { ok: () => true } } }),
      context: async () => ({}),
      log: silentLogger(),
    });
    const scrape = (authorization?: string) =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = request(`http://127.0.0.1:${guarded.port}/metrics`, { headers: authorization ? { authorization } : {}, agent: false }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        });
        req.on('error', reject);
        req.end();
      });
    try {
      const anonymous = await scrape();
      expect({ status: anonymous.status, code: JSON.parse(anonymous.text).errors[0].extensions.code }).toEqual({ status: 401, code: 'UNAUTHENTICATED' });
      expect(anonymous.text).not.toContain('keelson_graphql');
      const unscoped = await scrape('Bearer none');
      expect({ status: unscoped.status, message: JSON.parse(unscoped.text).errors[0].message }).toEqual({ status: 403, message: 'reading metrics needs a credential with the read scope' });
      const reader = await scrape('Bearer reader');
      expect(reader.status).toBe(200);
      expect(reader.text).toContain('keelson_graphql_requests_total');
    } finally {
      await guarded.stop();
    }
  });
});
