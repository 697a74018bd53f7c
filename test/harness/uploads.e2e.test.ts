import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gql, gqlData } from '../support/client';
import { codes, createProject, startHarnessMesh, waitIdle, type HarnessMesh } from '../support/harness';

jest.setTimeout(180_000);

// Seed 002's uploads: `POST /api/uploads?name=<filename>[&mime=<type>]` at the gateway's origin with
// the same credentials, the body the file → `{ id, path, size }`; sendUserTurn takes the id as an
// attachment, and the CLI (pi, which reads `@file` arguments) gets the file.

const MAX = 4096;
let h: HarnessMesh;
let uploadsUrl: URL;
let admin: string;
let projectId: string;

beforeAll(async () => {
  h = await startHarnessMesh([], { KEELSON_UPLOAD_MAX_BYTES: String(MAX) });
  uploadsUrl = new URL('/api/uploads', h.mesh.gatewayUrl);
  admin = h.mesh.adminToken!.token;
  projectId = (await createProject(h.mesh, 'uploads')).id;
});
afterAll(() => h?.teardown());

/** A token of the mesh with these scopes, made through the gateway with the admin token. */
async function tokenWith(name: string, scopes: string[]): Promise<string> {
  const { createApiToken } = await gqlData<{ createApiToken: { token: string } }>(h.mesh.gatewayUrl, 'mutation ($name: String!, $scopes: [String!]!) { createApiToken(name: $name, scopes: $scopes) { token } }', { name, scopes });
  return createApiToken.token;
}

async function upload(query: string, body: string | Buffer, token: string | null = admin): Promise<{ status: number; json: Record<string, unknown> & { errors?: { message: string; extensions: { code: string } }[] } }> {
  const res = await fetch(`${uploadsUrl.href}${query}`, { method: 'POST', body: typeof body === 'string' ? body : new Uint8Array(body), headers: { 'content-type': 'application/octet-stream', ...(token ? { authorization: `Bearer ${token}` } : {}) } });
  return { status: res.status, json: (await res.json()) as never };
}

const uploadsDir = () => join(h.mesh.dir, 'home', '.data', 'uploads');
const entries = async () => (await readdir(uploadsDir()).catch(() => [] as string[])).sort();

describe('uploads', () => {
  it('stores the body as the caller\'s upload and answers { id, path, size }', async () => {
    const content = 'line one\nline two: ünïcode\n';
    const { status, json } = await upload('?name=notes.txt&mime=text/plain', content);
    expect(status).toBe(201);
    expect(json).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), path: expect.stringContaining('notes.txt'), size: Buffer.byteLength(content) });
    expect(await readFile(json.path as string, 'utf8')).toBe(content);
    expect(JSON.parse(await readFile(join(uploadsDir(), `${json.id as string}.json`), 'utf8'))).toMatchObject({ name: 'notes.txt', mime: 'text/plain', owner: expect.stringMatching(/^token:|:/) });
  });

  it('refuses without a credential (401), without operate (403), a bad name (400), past the cap (413) — keeping nothing', async () => {
    const before = await entries();
    const anonymous = await upload('?name=a.txt', 'x', null);
    expect([anonymous.status, anonymous.json.errors?.[0]?.extensions.code]).toEqual([401, 'UNAUTHENTICATED']);
    const reader = await tokenWith('upload reader', ['read']);
    const readOnly = await upload('?name=a.txt', 'x', reader);
    expect([readOnly.status, readOnly.json.errors?.[0]?.extensions.code]).toEqual([403, 'FORBIDDEN']);
    expect(readOnly.json.errors?.[0]?.message).toMatch(/needs scope operate/);
    for (const query of ['', '?name=', '?name=..%2Fescape.txt', '?name=a%2Fb.txt', '?name=ok.txt&mime=nonsense']) {
      const bad = await upload(query, 'x');
      expect({ query, status: bad.status, code: bad.json.errors?.[0]?.extensions.code }).toEqual({ query, status: 400, code: 'BAD_USER_INPUT' });
    }
    const big = await upload('?name=big.bin', Buffer.alloc(MAX + 1, 1));
    expect([big.status, big.json.errors?.[0]?.extensions.code]).toEqual([413, 'BAD_REQUEST']);
    // Streamed without a length, the cap holds as well.
    const chunks = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < 5; i++) c.enqueue(new Uint8Array(1024));
        c.close();
      },
    });
    const streamed = await fetch(`${uploadsUrl.href}?name=stream.bin`, { method: 'POST', body: chunks, duplex: 'half', headers: { authorization: `Bearer ${admin}` } } as RequestInit);
    expect(streamed.status).toBe(413);
    // The sessions subgraph's own /api/uploads takes only the gateway's signed assertion, never a bearer token.
    const direct = await fetch(new URL('/api/uploads?name=direct.txt', h.mesh.subgraphUrls.sessions), { method: 'POST', body: 'x', headers: { authorization: `Bearer ${admin}` } });
    expect(direct.status).toBe(401);
    const get = await fetch(uploadsUrl, { headers: { authorization: `Bearer ${admin}` } });
    expect([get.status, get.headers.get('allow')]).toEqual([405, 'POST']);
    expect(await entries()).toEqual(before);
  });

  it('attaches an upload to a pi turn by id: the CLI reads the file although the keelson home is hidden from it', async () => {
    const { startSession } = await gqlData<{ startSession: { id: string } }>(h.mesh.gatewayUrl, 'mutation ($p: ID!) { startSession(harnessId: "pi", input: { projectId: $p }) { id } }', { p: projectId });
    const marker = `uploaded-marker-${Date.now()}`;
    const { json } = await upload('?name=brief.md&mime=text/markdown', `# Brief\n${marker}\n`);
    const since = h.model.requests().at(-1)?.seq ?? 0;
    const sent = await gqlData<{ sendUserTurn: { turnId: string } }>(h.mesh.gatewayUrl, 'mutation ($s: ID!, $a: [String!]) { sendUserTurn(sessionId: $s, text: "summarise the brief", attachments: $a) { turnId } }', {
      s: startSession.id,
      a: [json.id],
    });
    expect(sent.sendUserTurn.turnId).toEqual(expect.any(String));
    await waitIdle(h.mesh, startSession.id);
    const bodies = h.model.requests(since).map((r) => JSON.stringify(r.body));
    expect(bodies.length).toBeGreaterThan(0);
    expect(bodies.some((b) => b.includes(marker))).toBe(true);
  });

  it('refuses another caller\'s upload id and an unknown one as NOT_FOUND, starting no turn', async () => {
    const { startSession } = await gqlData<{ startSession: { id: string } }>(h.mesh.gatewayUrl, 'mutation ($p: ID!) { startSession(harnessId: "pi", input: { projectId: $p }) { id } }', { p: projectId });
    const operator = await tokenWith('upload operator', ['operate']);
    const { json } = await upload('?name=theirs.txt', 'private', operator);
    const since = h.model.requests().at(-1)?.seq ?? 0;
    const send = (a: string) => gql(h.mesh.gatewayUrl, 'mutation ($s: ID!, $a: [String!]) { sendUserTurn(sessionId: $s, text: "look", attachments: $a) { turnId } }', { s: startSession.id, a: [a] });
    expect(codes(await send(json.id as string))).toEqual(['NOT_FOUND']);
    expect(codes(await send('00000000-0000-4000-8000-000000000000'))).toEqual(['NOT_FOUND']);
    const { session } = await gqlData<{ session: { turnInFlight: boolean } }>(h.mesh.gatewayUrl, 'query ($s: ID!) { session(id: $s) { turnInFlight } }', { s: startSession.id });
    expect(session.turnInFlight).toBe(false);
    expect(h.model.requests(since)).toEqual([]);
  });
});
