// The mesh's own boundary, attacked from outside as a browser page, a rebinding attacker, a local
// process and an identity provider's users would: each refusal is asserted (status, code or close
// code) together with "nothing changed".
import { request } from 'node:http';
import { readdir } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { AssertionKey } from '@keelson/service';
import type { Caller } from '@keelson/schema';
import { generateKeyPair, type KeyLike } from 'jose';
import WebSocket from 'ws';
import { assertionCredentials } from '../support/auth';
import { bearer, gql, gqlData, gqlHttp, subscribe } from '../support/client';
import { startIdentityProvider, type IdentityProvider } from '../support/identityProvider';
import { startTestMesh, type TestMesh } from '../support/mesh';
import { startWorkflow, waitForRun } from '../support/runs';
import { until } from '../support/until';

jest.setTimeout(120_000);

const CREATE = 'mutation ($name: String!) { createProject(input: { name: $name }) { id name } }';
const EVENTS = 'subscription { projectEvents { cursor type } }';
const ALLOWED_ORIGIN = 'http://app.keelson.test:5173';

/** What a WebSocket upgrade came to: refused with an HTTP status, or open (then how it closed). */
type Upgrade = { status: number; body: string } | { socket: WebSocket; closed: Promise<{ code: number; reason: string }> };

function upgrade(url: string, headers: Record<string, string> = {}): Promise<Upgrade> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, 'graphql-transport-ws', { headers });
    socket.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    socket.once('open', () => {
      const closed = new Promise<{ code: number; reason: string }>((r) => socket.once('close', (code, reason) => r({ code, reason: String(reason) })));
      resolve({ socket, closed });
    });
    socket.once('error', (err) => {
      if (!String(err.message).includes('Unexpected server response')) reject(err);
    });
  });
}

/** Sends graphql-ws frames on an open socket and collects what comes back. */
function frames(socket: WebSocket) {
  const received: { type: string; id?: string; payload?: unknown }[] = [];
  socket.on('message', (data) => received.push(JSON.parse(String(data))));
  return {
    received,
    send: (frame: object) => socket.send(JSON.stringify(frame)),
    waitFor: (pred: (f: { type: string; id?: string; payload?: unknown }) => boolean, what: string) =>
      until(what, async () => received.find(pred), (f) => f !== undefined, 10_000),
  };
}

/** A raw HTTP POST with headers `fetch` will not let a test set (Host). */
function rawPost(url: string, body: string | Buffer, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Signs a JWT of `idp`: a `scope` claim when given, expiry 5 minutes unless `expiresIn` says otherwise. */
function signJwt(idp: IdentityProvider, claims: { sub?: string; scope?: string; iss?: string; aud?: string; expiresIn?: string | number }, key: KeyLike = idp.key): Promise<string> {
  let jwt = idp.token(claims.scope === undefined ? {} : { scope: claims.scope }).setIssuedAt();
  if (claims.iss !== undefined) jwt = jwt.setIssuer(claims.iss);
  if (claims.aud !== undefined) jwt = jwt.setAudience(claims.aud);
  if (claims.sub !== undefined) jwt = jwt.setSubject(claims.sub);
  return jwt.setExpirationTime(claims.expiresIn ?? '5m').sign(key);
}

describe("the mesh's boundary", () => {
  let mesh: TestMesh;
  let idp: IdentityProvider;
  /** Projects and workspace folders as they are; compared before and after each refused attack. */
  const observe = async () => ({
    projects: (await gqlData<{ projects: { name: string }[] }>(mesh.gatewayUrl, '{ projects { name } }')).projects.map((p) => p.name).sort(),
    folders: (await readdir(mesh.workspaceRoot).catch(() => [] as string[])).sort(),
  });

  beforeAll(async () => {
    idp = await startIdentityProvider();
    mesh = await startTestMesh({
      KEELSON_JWT_JWKS_URL: idp.url,
      KEELSON_JWT_ISSUER: idp.issuer,
      KEELSON_JWT_AUDIENCE: idp.audience,
      KEELSON_ALLOWED_ORIGINS: ALLOWED_ORIGIN,
      KEELSON_MAX_CONNECTIONS_PER_CREDENTIAL: '4',
    });
    await gqlData(mesh.gatewayUrl, CREATE, { name: 'existing' });
  });
  afterAll(async () => {
    await mesh?.teardown();
    await idp?.stop();
  });

  describe('a web page on another site', () => {
    it("cannot open a WebSocket to a subgraph (403 before the upgrade), nor run a mutation over one it could open", async () => {
      const before = await observe();
      const fromPage = await upgrade(mesh.projects.wsUrl, { origin: 'https://evil.example' });
      expect(fromPage).toMatchObject({ status: 403 });

      // Without an Origin (not a browser) the socket opens, but nothing runs without the gateway's assertion…
      const bare = await upgrade(mesh.projects.wsUrl);
      if (!('socket' in bare)) throw new Error(`expected an upgrade, got ${bare.status}`);
      frames(bare.socket).send({ type: 'connection_init' });
      expect(await bare.closed).toMatchObject({ code: 4401 });

      // …and even with one, a subgraph's WebSocket serves subscriptions only.
      for (const [url, query] of [
        [mesh.projects.wsUrl, 'mutation { createProject(input: { name: "from-ws" }) { id } }'],
        [mesh.runs.wsUrl, 'mutation { startWorkflow(name: "project-check") { id } }'],
      ] as const) {
        const asserted = await upgrade(url);
        if (!('socket' in asserted)) throw new Error('expected an upgrade');
        const f = frames(asserted.socket);
        f.send({ type: 'connection_init', payload: await assertionCredentials(mesh.security.assertions).connectionParams() });
        await f.waitFor((m) => m.type === 'connection_ack', 'connection_ack');
        f.send({ id: '1', type: 'subscribe', payload: { query } });
        const error = await f.waitFor((m) => m.type === 'error', 'the refusal');
        expect(error!.payload).toEqual([expect.objectContaining({ extensions: { code: 'FORBIDDEN', status: 403 }, message: expect.stringMatching(/subscriptions only/) })]);
        asserted.socket.close();
      }
      expect(await observe()).toEqual(before);
    });

    it('cannot upgrade to the gateway from a foreign origin (403), while a configured frontend origin can, with CORS for it alone', async () => {
      const refused = await upgrade(mesh.gatewayWsUrl, { origin: 'https://evil.example' });
      expect(refused).toMatchObject({ status: 403 });
      expect((refused as { body: string }).body).toContain('KEELSON_ALLOWED_ORIGINS');

      const allowed = await upgrade(mesh.gatewayWsUrl, { origin: ALLOWED_ORIGIN });
      if (!('socket' in allowed)) throw new Error(`the allowed origin was refused: ${allowed.status}`);
      allowed.socket.close();

      const preflight = await fetch(mesh.gatewayUrl, { method: 'OPTIONS', headers: { origin: ALLOWED_ORIGIN, 'access-control-request-method': 'POST' } });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get('access-control-allow-origin')).toBe(ALLOWED_ORIGIN);
      expect(preflight.headers.get('access-control-allow-headers')).toContain('authorization');
      const foreign = await fetch(mesh.gatewayUrl, { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } });
      expect(foreign.status).toBe(403);
      expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
    });
  });

  it('refuses a rebinding request (foreign Host and Origin) with 403 even carrying a valid token, creating nothing', async () => {
    const before = await observe();
    const port = new URL(mesh.gatewayUrl).port;
    const res = await rawPost(mesh.gatewayUrl, JSON.stringify({ query: CREATE, variables: { name: 'rebound' } }), {
      host: `evil.example:${port}`,
      origin: `http://evil.example:${port}`,
      authorization: `Bearer ${mesh.adminToken!.token}`,
    });
    expect(res.status).toBe(403);
    expect(JSON.parse(res.text).errors[0].extensions).toEqual({ code: 'FORBIDDEN', status: 403 });
    expect(await observe()).toEqual(before);
  });

  it('asks every request for a credential: none or a bad one is 401 and changes nothing', async () => {
    const before = await observe();
    for (const auth of [false as const, bearer('kmt_' + 'A'.repeat(43)), bearer('not-a-token'), bearer('a.b.c')]) {
      const { status, body } = await gqlHttp(mesh.gatewayUrl, CREATE, { name: 'anonymous' }, { auth });
      expect({ status, code: body.errors?.[0]?.extensions?.code }).toEqual({ status: 401, code: 'UNAUTHENTICATED' });
    }
    expect(await observe()).toEqual(before);
  });

  it('refuses a WebSocket that does not authenticate its connection_init (4401), before any subscription', async () => {
    const open = await upgrade(mesh.gatewayWsUrl);
    if (!('socket' in open)) throw new Error('expected an upgrade');
    const f = frames(open.socket);
    f.send({ type: 'connection_init', payload: {} });
    expect(await open.closed).toEqual({ code: 4401, reason: expect.stringMatching(/authentication required/) });
    expect(f.received.filter((m) => m.type === 'connection_ack' || m.type === 'next')).toEqual([]);
  });

  it('is not entered through a subgraph: no assertion, or one signed with another key, is 401 — _service included; health answers', async () => {
    const before = await observe();
    const forged = assertionCredentials(AssertionKey.random());
    for (const auth of [false as const, forged]) {
      const create = await gqlHttp(mesh.projects.url, CREATE, { name: 'direct' }, { auth });
      expect({ status: create.status, code: create.body.errors?.[0]?.extensions?.code }).toEqual({ status: 401, code: 'UNAUTHENTICATED' });
      const sdl = await gqlHttp(mesh.runs.url, '{ _service { sdl } }', {}, { auth });
      expect({ status: sdl.status, data: sdl.body.data ?? null }).toEqual({ status: 401, data: null });
    }
    expect(await (await fetch(new URL('/health', mesh.projects.url))).json()).toEqual({ ok: true, service: 'projects' });
    expect(await observe()).toEqual(before);
  });

  it('runs a token through its life: created with scopes, used, held to them, revoked — then 401 and its open socket closed', async () => {
    const { createApiToken } = await gqlData<{ createApiToken: { token: string; apiToken: { id: string; scopes: string[]; lastUsedAt: string | null } } }>(
      mesh.gatewayUrl,
      'mutation { createApiToken(name: "ci reader", scopes: ["read"], expiresInDays: 30) { token apiToken { id scopes lastUsedAt } } }',
    );
    expect(createApiToken.token).toMatch(/^kmt_[A-Za-z0-9_-]{43}$/);
    expect(createApiToken.apiToken).toMatchObject({ scopes: ['read'], lastUsedAt: null });
    const reader = bearer(createApiToken.token);

    const { viewer } = await gqlData<{ viewer: unknown }>(mesh.gatewayUrl, '{ viewer { subject kind scopes tokenId } }', {}, { auth: reader });
    expect(viewer).toEqual({ subject: 'token:ci reader', kind: 'token', scopes: ['read'], tokenId: createApiToken.apiToken.id });

    const before = await observe();
    const denied = await gqlHttp(mesh.gatewayUrl, CREATE, { name: 'by-reader' }, { auth: reader });
    expect(denied.status).toBe(403);
    expect(denied.body.errors?.[0]).toMatchObject({
      message: 'Mutation.createProject needs scope write; the caller (token:ci reader) has read',
      extensions: { code: 'FORBIDDEN', status: 403 },
    });
    expect(await observe()).toEqual(before);
    const listing = await gqlHttp(mesh.gatewayUrl, '{ apiTokens { id } }', {}, { auth: reader });
    expect(listing.body.errors?.[0]?.extensions).toMatchObject({ code: 'FORBIDDEN' });

    const sub = subscribe(mesh.gatewayWsUrl, EVENTS, {}, { auth: reader });
    await sub.next(); // the replay of "existing": the socket is live and the reader may read
    const revokedAt = Date.now();
    const { revokeApiToken } = await gqlData<{ revokeApiToken: { revokedAt: string } }>(mesh.gatewayUrl, 'mutation ($id: ID!) { revokeApiToken(id: $id) { revokedAt } }', { id: createApiToken.apiToken.id });
    expect(revokeApiToken.revokedAt).toEqual(expect.any(String));
    const closing = await sub.next(10_000);
    expect(closing.errors?.[0]?.message).toBe('close 4401: token revoked');
    expect(Date.now() - revokedAt).toBeLessThan(5_000);

    const after = await gqlHttp(mesh.gatewayUrl, '{ projects { name } }', {}, { auth: reader });
    expect({ status: after.status, code: after.body.errors?.[0]?.extensions?.code }).toEqual({ status: 401, code: 'UNAUTHENTICATED' });
    const { apiTokens } = await gqlData<{ apiTokens: { id: string; revokedAt: string | null; lastUsedAt: string | null }[] }>(mesh.gatewayUrl, '{ apiTokens { id revokedAt lastUsedAt } }');
    expect(apiTokens.find((t) => t.id === createApiToken.apiToken.id)).toMatchObject({ revokedAt: expect.any(String), lastUsedAt: expect.any(String) });
  });

  it('caps the sockets one credential holds (4429 past the cap)', async () => {
    const { createApiToken } = await gqlData<{ createApiToken: { token: string } }>(mesh.gatewayUrl, 'mutation { createApiToken(name: "many sockets", scopes: ["read"]) { token } }');
    const sockets: WebSocket[] = [];
    try {
      const results: { code: number } [] = [];
      for (let i = 0; i < 5; i++) {
        const open = await upgrade(mesh.gatewayWsUrl);
        if (!('socket' in open)) throw new Error('expected an upgrade');
        sockets.push(open.socket);
        const f = frames(open.socket);
        f.send({ type: 'connection_init', payload: { authorization: `Bearer ${createApiToken.token}` } });
        const outcome = await Promise.race([f.waitFor((m) => m.type === 'connection_ack', 'ack').then(() => ({ code: 0 })), open.closed]);
        results.push({ code: outcome.code });
      }
      expect(results.map((r) => r.code)).toEqual([0, 0, 0, 0, 4429]);
    } finally {
      for (const s of sockets) s.close();
    }
  });

  describe("an identity provider's JWTs", () => {
    it('accepts a valid one as that subject with the scopes it grants', async () => {
      const jwt = await signJwt(idp, { sub: 'alice@example.com', scope: 'read write openid' });
      const { viewer } = await gqlData<{ viewer: unknown }>(mesh.gatewayUrl, '{ viewer { subject kind scopes } }', {}, { auth: bearer(jwt) });
      expect(viewer).toEqual({ subject: 'alice@example.com', kind: 'jwt', scopes: ['read', 'write'] });
      await gqlData(mesh.gatewayUrl, CREATE, { name: 'by-alice' }, { auth: bearer(jwt) });
    });

    it('closes a WebSocket opened with one when it expires (4401), with its subscription open', async () => {
      const jwt = await signJwt(idp, { sub: 'dana@example.com', scope: 'read', expiresIn: Math.floor(Date.now() / 1000) + 3 });
      const opened = await upgrade(mesh.gatewayWsUrl);
      if (!('socket' in opened)) throw new Error('expected an upgrade');
      const f = frames(opened.socket);
      f.send({ type: 'connection_init', payload: { authorization: `Bearer ${jwt}` } });
      await f.waitFor((m) => m.type === 'connection_ack', 'connection_ack');
      f.send({ id: '1', type: 'subscribe', payload: { query: 'subscription { runEvents { cursor type } }' } });
      const at = Date.now();
      expect(await opened.closed).toMatchObject({ code: 4401, reason: 'credential expired' });
      // Closed at its exp, not at connect (without the close it would stay open: JWTs are not rechecked).
      expect(Date.now() - at).toBeGreaterThan(500);
    });

    it('refuses an expired one, a wrong audience, a wrong issuer, a foreign key and one granting no mesh scope (401); a missing scope is 403', async () => {
      const { privateKey: stranger } = await generateKeyPair('RS256');
      const cases: [string, string][] = [
        ['expired', await signJwt(idp, { sub: 'bob', scope: 'read', expiresIn: Math.floor(Date.now() / 1000) - 60 })],
        ['audience', await signJwt(idp, { sub: 'bob', scope: 'read', aud: 'someone-else' })],
        ['issuer', await signJwt(idp, { sub: 'bob', scope: 'read', iss: 'https://evil.example/' })],
        ['key', await signJwt(idp, { sub: 'bob', scope: 'read' }, stranger)],
        ['no scope', await signJwt(idp, { sub: 'bob', scope: 'openid profile' })],
      ];
      for (const [why, jwt] of cases) {
        const { status, body } = await gqlHttp(mesh.gatewayUrl, '{ viewer { subject } }', {}, { auth: bearer(jwt) });
        expect({ why, status, code: body.errors?.[0]?.extensions?.code }).toEqual({ why, status: 401, code: 'UNAUTHENTICATED' });
      }
      const before = await observe();
      const readOnly = await signJwt(idp, { sub: 'carol', scope: 'read' });
      const { status, body } = await gqlHttp(mesh.gatewayUrl, CREATE, { name: 'by-carol' }, { auth: bearer(readOnly) });
      expect({ status, message: body.errors?.[0]?.message }).toEqual({ status: 403, message: 'Mutation.createProject needs scope write; the caller (carol) has read' });
      expect(await observe()).toEqual(before);
    });
  });

  it('records who did it on every event (the actor of the request that wrote it)', async () => {
    const { createApiToken } = await gqlData<{ createApiToken: { token: string } }>(mesh.gatewayUrl, 'mutation { createApiToken(name: "writer", scopes: ["write"]) { token } }');
    const { createProject } = await gqlData<{ createProject: { id: string } }>(mesh.gatewayUrl, CREATE, { name: 'by-writer' }, { auth: bearer(createApiToken.token) });
    const [event] = (await mesh.runs.services.dataSource.query(
      "SELECT actor FROM events WHERE stream = 'projects' AND key = $1 AND type = 'PROJECT_CREATED'",
      [createProject.id],
    )) as { actor: unknown }[];
    expect(event!.actor).toEqual({ subject: 'token:writer', kind: 'token' });
  });

  it('records who answered an approval gate on APPROVAL_ANSWERED', async () => {
    const { project } = await gqlData<{ project: { id: string } }>(mesh.gatewayUrl, '{ project(name: "existing") { id } }');
    const { createApiToken } = await gqlData<{ createApiToken: { token: string } }>(mesh.gatewayUrl, 'mutation { createApiToken(name: "operator", scopes: ["operate"]) { token } }');
    const operator = bearer(createApiToken.token);
    const started = await startWorkflow(mesh.gatewayUrl, 'project-check', { projectId: project.id });
    const paused = await waitForRun(mesh.gatewayUrl, started.id, (r) => r.status === 'PAUSED', 60_000);
    const answer = await gqlData<{ respondToRun: { ok: boolean } }>(
      mesh.gatewayUrl,
      'mutation ($r: ID!, $p: String) { respondToRun(runId: $r, nodeId: "review", text: "approve", pauseId: $p) { ok } }',
      { r: started.id, p: paused.pendingApproval!.pauseId },
      { auth: operator },
    );
    expect(answer.respondToRun.ok).toBe(true);
    const [event] = (await mesh.runs.services.dataSource.query(
      "SELECT actor FROM events WHERE stream = 'runs' AND key = $1 AND type = 'APPROVAL_ANSWERED'",
      [started.id],
    )) as { actor: unknown }[];
    expect(event!.actor).toEqual({ subject: 'token:operator', kind: 'token' });
  });

  describe('a caller that reaches a subgraph port directly', () => {
    // Assertions are signed with the mesh's own key (as the gateway or a mesh service would), for
    // callers whose scopes fall short: the subgraph checks its own @requiresScopes, as the gateway does.
    const reader: Caller = { subject: 'token:reader', kind: 'token', scopes: ['read'], tokenId: '00000000-0000-4000-8000-00000000000a' };
    const nobody: Caller = { subject: 'jwt:nobody', kind: 'jwt', scopes: [] };

    it("is held to the subgraph's own scope rules: a reader's assertion cannot create a project, and nothing is created", async () => {
      const before = await observe();
      const res = await gql(mesh.subgraphUrls.projects!, CREATE, { name: 'direct' }, { auth: assertionCredentials(mesh.security.assertions, reader) });
      expect(res.errors?.[0]?.extensions).toMatchObject({ code: 'FORBIDDEN', requiredScopes: [['write']] });
      expect(res.errors?.[0]?.message).toMatch(/^Mutation\.createProject needs scope write; the caller \(token:reader\) has read$/);
      expect(await observe()).toEqual(before);
      // The same reader still reads there.
      await expect(gqlData(mesh.subgraphUrls.projects!, '{ projects { name } }', {}, { auth: assertionCredentials(mesh.security.assertions, reader) })).resolves.toMatchObject({
        projects: expect.arrayContaining([{ name: 'existing' }]),
      });
    });

    it('cannot subscribe over the subgraph WebSocket without the scope the field needs', async () => {
      const wsUrl = mesh.subgraphUrls.runs!.replace(/^http/, 'ws');
      const sub = subscribe(wsUrl, 'subscription { runEvents { cursor type } }', {}, { auth: assertionCredentials(mesh.security.assertions, nobody) });
      try {
        const first = await sub.next(10_000);
        expect(first.errors?.[0]?.extensions).toMatchObject({ code: 'FORBIDDEN' });
        expect(first.errors?.[0]?.message).toMatch(/^Subscription\.runEvents needs scope read/);
      } finally {
        await sub.close();
      }
    });
  });

  describe('limits', () => {
    it('refuses 1,000 aliases of one field, 100 aliases, and a 20,000-token document before anything resolves', async () => {
      const aliases = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: projects { id }`).join(' ')} }`;
      // 1,000 aliases are 6,000 tokens: the parser stops first.
      const thousand = await gqlHttp(mesh.gatewayUrl, aliases(1000));
      expect({ status: thousand.status, code: thousand.body.errors?.[0]?.extensions?.code, data: thousand.body.data ?? null }).toEqual({ status: 400, code: 'GRAPHQL_PARSE_FAILED', data: null });
      const hundred = await gqlHttp(mesh.gatewayUrl, aliases(100));
      expect({ status: hundred.status, code: hundred.body.errors?.[0]?.extensions?.code, message: hundred.body.errors?.[0]?.message }).toEqual({
        status: 400,
        code: 'GRAPHQL_VALIDATION_FAILED',
        message: 'Syntax Error: Aliases limit of 30 exceeded, found 100.',
      });
      const long = `{ ${Array.from({ length: 10_000 }, () => '__typename').join(' ')} }`;
      const huge = await gqlHttp(mesh.gatewayUrl, long);
      expect({ status: huge.status, code: huge.body.errors?.[0]?.extensions?.code }).toEqual({ status: 400, code: 'GRAPHQL_PARSE_FAILED' });
      expect(huge.body.errors?.[0]?.message).toMatch(/more that 5000 tokens/);
    });

    it('applies the same limits in every subgraph: a query 41 deep sent straight to one is refused', async () => {
      const deep = `{ projects { workspaces { ${'project { workspaces { '.repeat(20)}id${' } }'.repeat(20)} } } }`;
      const res = await gqlHttp(mesh.projects.url, deep);
      expect({ status: res.status, code: res.body.errors?.[0]?.extensions?.code }).toEqual({ status: 400, code: 'GRAPHQL_VALIDATION_FAILED' });
      expect(res.body.errors?.map((e) => e.message)).toContainEqual(expect.stringMatching(/^Syntax Error: Query depth limit of 12 exceeded, found 4\d\.$/));
    });

    it('caps the subscriptions of one socket (100): 150 become 100 streams and 50 refusals', async () => {
      const open = await upgrade(mesh.gatewayWsUrl);
      if (!('socket' in open)) throw new Error('expected an upgrade');
      const f = frames(open.socket);
      f.send({ type: 'connection_init', payload: { authorization: `Bearer ${mesh.adminToken!.token}` } });
      await f.waitFor((m) => m.type === 'connection_ack', 'ack');
      for (let i = 1; i <= 150; i++) f.send({ id: String(i), type: 'subscribe', payload: { query: EVENTS } });
      await until('every subscription answered', async () => new Set(f.received.filter((m) => m.id).map((m) => m.id)).size, (n) => n >= 150, 30_000);
      const refused = f.received.filter((m) => m.type === 'error');
      expect(refused).toHaveLength(50);
      expect(refused[0]!.payload).toEqual([expect.objectContaining({ extensions: { code: 'BAD_REQUEST', status: 400 }, message: expect.stringMatching(/at most 100/) })]);
      open.socket.close();
    });

    it('bounds a body after decompression (413) and refuses an unknown content-encoding (415)', async () => {
      const bomb = gzipSync(Buffer.alloc(50 * 1024 * 1024, ' '));
      expect(bomb.length).toBeLessThan(100 * 1024);
      const res = await rawPost(mesh.gatewayUrl, bomb, { 'content-encoding': 'gzip', authorization: `Bearer ${mesh.adminToken!.token}` });
      expect(res.status).toBe(413);
      expect(JSON.parse(res.text).errors[0].message).toBe('request body exceeds 1048576 bytes (after decompression)');
      const zipped = gzipSync(JSON.stringify({ query: '{ viewer { kind } }' }));
      const ok = await rawPost(mesh.gatewayUrl, zipped, { 'content-encoding': 'gzip', authorization: `Bearer ${mesh.adminToken!.token}` });
      expect(JSON.parse(ok.text)).toEqual({ data: { viewer: { kind: 'token' } } });
      const odd = await rawPost(mesh.gatewayUrl, 'x', { 'content-encoding': 'zstd-ish', authorization: `Bearer ${mesh.adminToken!.token}` });
      expect(odd.status).toBe(415);
    });

    it('bounds every Postgres session: statement, idle-in-transaction and connect timeouts are set', async () => {
      const [row] = (await mesh.runs.services.dataSource.query(
        "SELECT current_setting('statement_timeout') AS statement, current_setting('idle_in_transaction_session_timeout') AS idle",
      )) as { statement: string; idle: string }[];
      expect(row).toEqual({ statement: '30s', idle: '1min' });
      await expect(mesh.runs.services.dataSource.query("SET LOCAL statement_timeout = '50ms'; SELECT pg_sleep(1)")).rejects.toThrow(/statement timeout/);
    });
  });
});

describe('authentication off', () => {
  it('refuses to start on a non-loopback bind, naming the fix', async () => {
    await expect(startTestMesh({ KEELSON_AUTH: 'off', KEELSON_HOST: '0.0.0.0' })).rejects.toThrow(/refusing to bind 0\.0\.0\.0 with KEELSON_AUTH=off/);
  });

  it('serves loopback without credentials as an anonymous admin, and says so', async () => {
    const mesh = await startTestMesh({ KEELSON_AUTH: 'off' });
    try {
      expect(mesh.adminToken).toBeNull();
      const { viewer } = await gqlData<{ viewer: unknown }>(mesh.gatewayUrl, '{ viewer { subject kind } }', {}, { auth: false });
      expect(viewer).toEqual({ subject: 'anonymous (KEELSON_AUTH=off)', kind: 'service' });
      // The subgraphs still refuse a forged assertion: "off" asks for nothing, it does not accept lies.
      const forged = await gql(mesh.projects.url, '{ projects { id } }', {}, { auth: assertionCredentials(AssertionKey.random()) });
      expect(forged.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    } finally {
      await mesh.teardown();
    }
  });
});
