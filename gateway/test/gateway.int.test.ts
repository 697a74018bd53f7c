import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseEnv } from '@keelson/schema';
import WebSocket from 'ws';
import { createLogger, freePort, silentLogger } from '@keelson/service';
import { gatewayTlsFromEnv, startGateway, type RunningGateway } from '../src';
import { bearers, buildSchemas, executions, security, slowHold, startSubgraphs, TestCredentials, type Subgraphs } from './fixtures';

const credentials = new TestCredentials();

interface GraphQLBody {
  data?: Record<string, unknown> | null;
  errors?: Array<{ message: string; path?: unknown[]; extensions?: Record<string, unknown> }>;
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: GraphQLBody }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: bearers.admin, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as GraphQLBody };
}

/** `{ reviews { product { reviews { product … } } } }`, `depth` fields deep. */
function nested(depth: number): string {
  let selection = 'id';
  for (let level = depth - 1; level >= 1; level -= 1) {
    selection = `${level % 2 === 1 ? 'reviews' : 'product'} { ${selection} }`;
  }
  return `{ ${selection} }`;
}

describe('the gateway over HTTP', () => {
  let subgraphs: Subgraphs;
  let gateway: RunningGateway;
  /** What the gateway logged (pino records; level 50 is error). */
  const logged: { level: number; msg: string }[] = [];

  beforeAll(async () => {
    subgraphs = await startSubgraphs();
    gateway = await startGateway({ security, credentials, supergraphSdl: subgraphs.supergraphSdl,
      port: 0,
      subgraphUrls: { catalog: subgraphs.catalog.url, reviews: subgraphs.reviews.url },
      log: createLogger('gateway', 'info', { write: (line: string) => void logged.push(JSON.parse(line) as { level: number; msg: string }) }),
    });
  });

  afterAll(async () => {
    await gateway?.stop();
    await subgraphs?.stop();
  });

  it('answers one query across both subgraphs, joining Product and Review by key', async () => {
    const { status, body } = await post(gateway.url, {
      query: '{ products { id name reviews { body product { name price } } } reviews { id product { name } } }',
    });

    expect(status).toBe(200);
    expect(body).toEqual({
      data: {
        products: [
          { id: 'p1', name: 'Keel', reviews: [{ body: 'sturdy', product: { name: 'Keel', price: 120 } }] },
          { id: 'p2', name: 'Rib', reviews: [{ body: 'flexible', product: { name: 'Rib', price: 45 } }] },
        ],
        reviews: [
          { id: 'r1', product: { name: 'Keel' } },
          { id: 'r2', product: { name: 'Rib' } },
        ],
      },
    });
  });

  it('keeps a subgraph error\'s code, status and details, and hides which subgraph raised it', async () => {
    const { body } = await post(gateway.url, { query: '{ missingProduct(id: "p404") { name } }' });

    expect(body.errors).toEqual([
      expect.objectContaining({
        message: 'no product p404',
        path: ['missingProduct'],
        extensions: { code: 'NOT_FOUND', status: 404, id: 'p404' },
      }),
    ]);
  });

  it('masks an internal error: the client reads neither its message nor a stack', async () => {
    const { body } = await post(gateway.url, { query: '{ brokenField }' });

    expect(body.errors).toEqual([
      { message: 'Internal server error', path: ['brokenField'], extensions: { code: 'INTERNAL_SERVER_ERROR', status: 500 } },
    ]);
    expect(JSON.stringify(body)).not.toContain('hunter2');
  });

  it('rejects a query nested deeper than the limit (graphql-armor), naming the limit and the depth found', async () => {
    const ok = await post(gateway.url, { query: nested(12) });
    expect(ok.body.errors).toBeUndefined();

    const { status, body } = await post(gateway.url, { query: nested(13) });

    expect(status).toBe(400);
    expect(body.errors).toHaveLength(1);
    expect(body.errors![0]!.extensions).toMatchObject({ code: 'GRAPHQL_VALIDATION_FAILED', status: 400 });
    expect(body.errors![0]!.message).toBe('Syntax Error: Query depth limit of 12 exceeded, found 13.');
  });

  it('counts fragments where they are spread when measuring depth', async () => {
    const query = `query Deep { reviews { ...R } }
      fragment R on Review { product { reviews { product { reviews { product { reviews { product { reviews { product { reviews { product { id } } } } } } } } } } } }`;

    const { body } = await post(gateway.url, { query });

    expect(body.errors?.[0]?.message).toBe('Syntax Error: Query depth limit of 12 exceeded, found 13.');
  });

  it('blocks a simple (CSRF-able) request: a POST with content-type text/plain', async () => {
    const res = await fetch(gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', authorization: bearers.admin },
      body: JSON.stringify({ query: '{ products { id } }' }),
    });

    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/Cross-Site Request Forgery/);
  });

  it('serves a GET query only with the preflight header', async () => {
    const url = `${gateway.url}?query=${encodeURIComponent('{ products { id } }')}`;

    expect((await fetch(url, { headers: { authorization: bearers.admin } })).status).toBe(400);
    const allowed = await fetch(url, { headers: { 'apollo-require-preflight': 'true', authorization: bearers.admin } });
    expect(allowed.status).toBe(200);
    expect(await allowed.json()).toEqual({ data: { products: [{ id: 'p1' }, { id: 'p2' }] } });
  });

  it('refuses a batched request (an array body)', async () => {
    const { status, body } = await post(gateway.url, [{ query: '{ products { id } }' }, { query: '{ reviews { id } }' }]);

    expect(status).toBe(400);
    expect(body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_REQUEST', status: 400 });
  });

  it('serves introspection on loopback', async () => {
    const { body } = await post(gateway.url, { query: '{ __schema { subscriptionType { fields { name } } } }' });

    expect(body.data).toEqual({ __schema: { subscriptionType: { fields: [{ name: 'reviewAdded' }] } } });
  });

  it('serves GraphiQL at / and /graphiql under a strict CSP: its bundle from this origin, no inline script', async () => {
    for (const path of ['/', '/graphiql']) {
      const res = await fetch(new URL(path, gateway.url));
      const html = await res.text();

      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.headers.get('content-security-policy')).toMatch(/^default-src 'none'; script-src 'self'; worker-src 'self';/);
      expect(html).toContain('<script type="module" src="/graphiql/app.js"></script>');
      expect(html).not.toMatch(/<script(?![^>]*\bsrc="\/graphiql\/)[^>]*>|https?:\/\//i);
    }
    for (const file of ['app.js', 'app.css', 'graphql.worker.js']) {
      const res = await fetch(new URL(`/graphiql/${file}`, gateway.url));
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(file.endsWith('.css') ? /^text\/css/ : /^text\/javascript/);
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(10_000);
    }
    // Only the bundle's own files: nothing else of the folder, nothing beside it.
    expect((await fetch(new URL('/graphiql/build.js', gateway.url))).status).toBe(404);
  });

  it('asks a subgraph once for identical queries of one caller in flight together, and never shares across callers', async () => {
    const query = '{ slowCount(ms: 0) }';
    const before = executions.slowCount;
    // The answers are held until every request has had ample time to reach the gateway (a loaded
    // machine may take long to send five), so all five are in flight together.
    const inFlightTogether = async <T>(requests: Promise<T>[]): Promise<T[]> => {
      const started = executions.slowStarted;
      while (executions.slowStarted === started) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 1_500));
      slowHold.open();
      return Promise.all(requests);
    };
    slowHold.close();
    const same = await inFlightTogether(Array.from({ length: 5 }, () => post(gateway.url, { query })));
    expect(same.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(new Set(same.map((r) => JSON.stringify(r.body)))).toEqual(new Set([JSON.stringify({ data: { slowCount: before + 1 } })]));
    expect(executions.slowCount).toBe(before + 1);

    // Two callers: each gets an answer fetched for it, even for the same query at the same moment.
    slowHold.close();
    const [one, other] = await inFlightTogether([post(gateway.url, { query }), post(gateway.url, { query }, { authorization: bearers.otherAdmin })]);
    expect(executions.slowCount).toBe(before + 3);
    expect([one.body.data, other.body.data].map((d) => (d as { slowCount: number }).slowCount).sort()).toEqual([before + 2, before + 3]);
    // A mutation is never shared (none here: the catalog has none), nor a request of another scope set:
    // the reader is refused before any fetch (the fixture's undeclared root fields need admin).
    const reader = await post(gateway.url, { query }, { authorization: bearers.reader });
    expect(reader.body.errors?.[0]?.extensions).toMatchObject({ code: 'FORBIDDEN' });
    expect(executions.slowCount).toBe(before + 3);
  });

  it('checks scopes per caller on every request of a query text, whoever sent it first', async () => {
    const query = '{ products { id } }';
    const refused = () => post(gateway.url, { query }, { authorization: bearers.reader });
    const admitted = () => post(gateway.url, { query });
    const answers = [await refused(), await admitted(), await admitted(), await refused()];
    expect(answers.map((r) => r.status)).toEqual([403, 200, 200, 403]);
    expect(answers[2]!.body.data).toEqual({ products: [{ id: 'p1' }, { id: 'p2' }] });
    expect(answers[3]!.body.errors?.[0]?.extensions).toMatchObject({ code: 'FORBIDDEN' });
  });

  it('refuses a subscription sent over plain HTTP (JSON, or multipart without the subscription spec) with 400 BAD_REQUEST naming the ways in, logging no error', async () => {
    const query = 'subscription { reviewAdded { id } }';
    const loggedBefore = logged.length;
    for (const accept of ['application/json', 'multipart/mixed, application/json']) {
      const res = await post(gateway.url, { query }, { accept });
      expect({ accept, status: res.status, errors: res.body.errors }).toEqual({
        accept,
        status: 400,
        errors: [expect.objectContaining({ message: expect.stringMatching(/served over WebSocket .*graphql-transport-ws.* at \/graphql, or as Server-Sent Events/), extensions: expect.objectContaining({ code: 'BAD_REQUEST', status: 400 }) })],
      });
    }
    expect(logged.slice(loggedBefore).filter((entry) => entry.level >= 50)).toEqual([]);
  });

  it('answers the health probe', async () => {
    const res = await fetch(new URL('/health', gateway.url));

    expect(await res.json()).toEqual({ ok: true, service: 'gateway' });
  });
});

/** Resolves when `port` can be bound on every address (nothing listens there); rejects otherwise. */
async function expectPortFree(port: number): Promise<void> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(port, '0.0.0.0', resolve);
  });
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

describe('startGateway configuration', () => {
  it('refuses 0.0.0.0 with authentication off and binds nothing', async () => {
    const { supergraphSdl } = await buildSchemas();
    const port = await freePort('0.0.0.0');

    await expect(startGateway({ security: { ...security, auth: 'off' }, supergraphSdl, host: '0.0.0.0', port, log: silentLogger() })).rejects.toThrow(
      /gateway: refusing to bind 0\.0\.0\.0 with KEELSON_AUTH=off/,
    );
    // The port is still free: nothing listened, not even briefly left behind.
    await expectPortFree(port);
  });

  it('refuses plain HTTP on a non-loopback bind, naming the fix, and binds nothing', async () => {
    const { supergraphSdl } = await buildSchemas();
    const port = await freePort('0.0.0.0');
    await expect(startGateway({ security, credentials, supergraphSdl, host: '0.0.0.0', port, log: silentLogger() })).rejects.toThrow(
      /gateway: refusing to serve plain HTTP on 0\.0\.0\.0: .*KEELSON_TLS_CERT and KEELSON_TLS_KEY .*KEELSON_TLS_TERMINATED_BY/,
    );
    await expectPortFree(port);
  });

  it('binds 0.0.0.0 behind a TLS-terminating proxy with authentication on, still asks every request for a credential, and refuses introspection', async () => {
    const { supergraphSdl } = await buildSchemas();
    const log = silentLogger();

    const gateway = await startGateway({ security, credentials, supergraphSdl, host: '0.0.0.0', port: 0, log, tlsTerminatedBy: 'the test harness' });
    try {
      const anonymous = await post(`http://127.0.0.1:${gateway.port}/graphql`, { query: '{ products { id } }' }, { authorization: '' });
      expect(anonymous.status).toBe(401);
      expect(anonymous.body.errors?.[0]?.extensions).toMatchObject({ code: 'UNAUTHENTICATED', status: 401 });
      const { body } = await post(`http://127.0.0.1:${gateway.port}/graphql`, { query: '{ __schema { queryType { name } } }' });
      expect(body.errors?.[0]?.extensions).toMatchObject({ code: 'GRAPHQL_VALIDATION_FAILED', status: 400 });
      expect(body.errors?.[0]?.message).toMatch(/introspection is not allowed/i);
    } finally {
      await gateway.stop();
    }
  });

  it('serves HTTPS and WSS with KEELSON_TLS_CERT/KEY (a certificate made now), and nothing in clear on that port', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keelson-tls-'));
    try {
      execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'ignore' });
      const tls = await gatewayTlsFromEnv(parseEnv({ KEELSON_TLS_CERT: join(dir, 'cert.pem'), KEELSON_TLS_KEY: join(dir, 'key.pem') }));
      await expect(gatewayTlsFromEnv(parseEnv({ KEELSON_TLS_CERT: join(dir, 'cert.pem') }))).rejects.toThrow('TLS needs both KEELSON_TLS_CERT and KEELSON_TLS_KEY (KEELSON_TLS_KEY is not set)');
      await expect(gatewayTlsFromEnv(parseEnv({ KEELSON_TLS_CERT: join(dir, 'nope.pem'), KEELSON_TLS_KEY: join(dir, 'key.pem') }))).rejects.toThrow(/^KEELSON_TLS_CERT=.*nope\.pem cannot be read/);
      const subgraphs = await startSubgraphs();
      const gateway = await startGateway({ security, credentials, supergraphSdl: subgraphs.supergraphSdl, port: 0, subgraphUrls: { catalog: subgraphs.catalog.url, reviews: subgraphs.reviews.url }, log: silentLogger(), tls: tls! });
      try {
        expect(gateway.url).toBe(`https://127.0.0.1:${gateway.port}/graphql`);
        const ca = readFileSync(join(dir, 'cert.pem'));
        const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
          const req = httpsRequest(gateway.url, { method: 'POST', ca, headers: { 'content-type': 'application/json', authorization: bearers.admin } }, (res) => {
            let body = '';
            res.on('data', (c: Buffer) => (body += c.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          });
          req.on('error', reject);
          req.end(JSON.stringify({ query: '{ products { id } }' }));
        });
        expect(answer).toEqual({ status: 200, body: JSON.stringify({ data: { products: [{ id: 'p1' }, { id: 'p2' }] } }) + '\n' });
        // Plain HTTP to the TLS port gets no GraphQL answer.
        await expect(fetch(`http://127.0.0.1:${gateway.port}/graphql`, { method: 'POST', body: '{}' })).rejects.toThrow();
        // WSS: the socket authenticates as over WS.
        const socket = new WebSocket(gateway.wsUrl, 'graphql-transport-ws', { ca });
        const acked = await new Promise<string>((resolve, reject) => {
          socket.once('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: bearers.admin } })));
          socket.once('message', (data) => resolve(JSON.parse(String(data)).type as string));
          socket.once('error', reject);
        });
        socket.close();
        expect({ wsUrl: gateway.wsUrl.startsWith('wss://'), acked }).toEqual({ wsUrl: true, acked: 'connection_ack' });
      } finally {
        await gateway.stop();
        await subgraphs.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a subgraphUrls entry naming no subgraph of the supergraph', async () => {
    const { supergraphSdl } = await buildSchemas();

    await expect(
      startGateway({ security, credentials, supergraphSdl, port: 0, subgraphUrls: { catalgo: 'http://127.0.0.1:1/graphql' }, log: silentLogger() }),
    ).rejects.toThrow('subgraphUrls names "catalgo", which is not a subgraph of the supergraph (it has: catalog, reviews)');
  });

  it('answers SERVICE_UNAVAILABLE (503) for a field whose subgraph cannot be reached', async () => {
    const { supergraphSdl } = await buildSchemas();
    const down = `http://127.0.0.1:${await freePort()}/graphql`;
    const gateway = await startGateway({ security, credentials, supergraphSdl, port: 0, subgraphUrls: { catalog: down, reviews: down }, log: silentLogger() });
    try {
      const { body } = await post(gateway.url, { query: '{ products { id } }' });

      expect(body.errors).toEqual([
        expect.objectContaining({
          message: 'subgraph "catalog" is unreachable; retry shortly',
          extensions: { code: 'SERVICE_UNAVAILABLE', status: 503 },
        }),
      ]);
    } finally {
      await gateway.stop();
    }
  });
});
