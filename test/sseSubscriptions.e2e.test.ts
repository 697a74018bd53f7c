import { createClient } from 'graphql-sse';
import { gqlData } from './support/client';
import { startTestMesh, type TestMesh } from './support/mesh';
import { quietTemporalRuntime } from './support/temporalServer';

quietTemporalRuntime();

// Subscriptions over Server-Sent Events at the gateway's GraphQL URL (graphql-sse's distinct
// connections mode): graphql-sse's own client, a dropped stream resumed with Last-Event-ID, the
// same authentication and revocation as WebSocket.

const CREATE = 'mutation ($name: String!) { createProject(input: { name: $name }) { id } }';
const WATCH = 'subscription Watch($after: String) { projectEvents(after: $after) { cursor type project { name } } }';

interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

/** The first `n` of `items` once that many arrived (woken by `notify`, else every 100 ms); throws past `timeoutMs`. */
async function atLeast<T>(items: T[], n: number, timeoutMs: number, notify?: (wake: () => void) => void): Promise<T[]> {
  const deadline = Date.now() + timeoutMs;
  while (items.length < n) {
    if (Date.now() > deadline) throw new Error(`only ${items.length} of ${n} arrived: ${JSON.stringify(items)}`);
    await new Promise<void>((wake) => {
      notify?.(wake);
      setTimeout(wake, 100);
    });
  }
  return items.slice(0, n);
}

/** A raw event stream (as curl -N would read it): POST with accept text/event-stream, events parsed as they come. */
async function openStream(url: string, body: object, headers: Record<string, string>) {
  const abort = new AbortController();
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers }, body: JSON.stringify(body), signal: abort.signal });
  const events: SseEvent[] = [];
  const waiters: (() => void)[] = [];
  const done = (async () => {
    if (!res.body || !res.headers.get('content-type')?.startsWith('text/event-stream')) return;
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let at: number;
        while ((at = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          const lines = block.split('\n').filter((l) => !l.startsWith(':'));
          if (!lines.length) continue;
          const field = (name: string) => lines.filter((l) => l.startsWith(`${name}:`)).map((l) => l.slice(name.length + 1).trimStart());
          events.push({ ...(field('id')[0] ? { id: field('id')[0] } : {}), event: field('event')[0] ?? 'message', data: field('data').join('\n') });
          waiters.splice(0).forEach((w) => w());
        }
      }
    } catch {
      // aborted
    }
  })();
  const until = (n: number, timeoutMs = 15_000) => atLeast(events, n, timeoutMs, (r) => waiters.push(r));
  return { res, events, until, done, drop: () => abort.abort() };
}

/** Apollo's multipart subscription response, read as its spec says: parts after `---`, `-----` ends it, `{}` is a heartbeat. */
async function openMultipart(url: string, body: object, headers: Record<string, string>) {
  const abort = new AbortController();
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'multipart/mixed;subscriptionSpec=1.0, application/json', ...headers },
    body: JSON.stringify(body),
    signal: abort.signal,
  });
  const parts: { payload?: unknown; errors?: { extensions?: { code?: string } }[] }[] = [];
  let ended = false;
  const done = (async () => {
    if (!res.body || !res.headers.get('content-type')?.startsWith('multipart/mixed')) return;
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        for (;;) {
          if (buffer.startsWith('\r\n-----')) {
            ended = true;
            return;
          }
          const next = buffer.indexOf('\r\n---', 1);
          if (!buffer.startsWith('\r\n---\r\n') || next < 0) break;
          const part = buffer.slice(0, next);
          buffer = buffer.slice(next);
          const json = JSON.parse(part.slice(part.indexOf('\r\n\r\n') + 4)) as (typeof parts)[number];
          if (Object.keys(json).length) parts.push(json); // {} is a heartbeat
        }
      }
      // The last part has no boundary after it until the closing one arrives with it.
    } catch {
      // aborted
    }
  })();
  const until = (n: number, timeoutMs = 15_000) => atLeast(parts, n, timeoutMs);
  return { res, parts, until, done, ended: () => ended, drop: () => abort.abort() };
}

describe('subscriptions over Server-Sent Events', () => {
  let mesh: TestMesh;
  let token: string;
  beforeAll(async () => {
    mesh = await startTestMesh({ KEELSON_MAX_CONNECTIONS_PER_CREDENTIAL: '2' });
    token = mesh.adminToken!.token;
  });
  afterAll(() => mesh?.teardown());

  it("streams a subscription to graphql-sse's own client, with the same credentials", async () => {
    const client = createClient({ url: mesh.gatewayUrl, headers: { authorization: `Bearer ${token}` }, retryAttempts: 0 });
    const stream = client.iterate<{ projectEvents: { type: string; project: { name: string } | null } }>({ query: WATCH });
    try {
      // The stream is open once the gateway holds its WebSocket: create until the event arrives.
      const first = stream.next();
      let created = 0;
      const creating = setInterval(() => void gqlData(mesh.gatewayUrl, CREATE, { name: `sse-${created++}` }).catch(() => undefined), 300);
      try {
        const { value } = await first;
        expect(value).toMatchObject({ data: { projectEvents: { type: 'PROJECT_CREATED', project: { name: expect.stringMatching(/^sse-\d+$/) } } } });
      } finally {
        clearInterval(creating);
      }
    } finally {
      await stream.return?.();
      client.dispose();
    }
  });

  it('resumes a dropped stream from Last-Event-ID: every event once, in order', async () => {
    const auth = { authorization: `Bearer ${token}` };
    const first = await openStream(mesh.gatewayUrl, { query: WATCH }, auth);
    expect(first.res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    // Nothing is streamed until the subscription is live upstream: create one project at a time until seen.
    let seen: SseEvent | undefined;
    for (let i = 0; !seen && i < 20; i++) {
      await gqlData(mesh.gatewayUrl, CREATE, { name: `resume-a${i}` });
      seen = (await first.until(1, 1_000).catch(() => undefined))?.[0];
    }
    expect(seen).toMatchObject({ event: 'next', id: expect.any(String) });
    first.drop();
    await first.done;
    const lastName = (JSON.parse(seen!.data) as { data: { projectEvents: { project: { name: string } } } }).data.projectEvents.project.name;
    // While disconnected: two more.
    await gqlData(mesh.gatewayUrl, CREATE, { name: 'resume-b' });
    await gqlData(mesh.gatewayUrl, CREATE, { name: 'resume-c' });
    const again = await openStream(mesh.gatewayUrl, { query: WATCH }, { ...auth, 'last-event-id': seen!.id! });
    const nameOf = (e: SseEvent) => (JSON.parse(e.data) as { data: { projectEvents: { project: { name: string } } } }).data.projectEvents.project.name;
    for (let n = 1; !again.events.some((e) => nameOf(e) === 'resume-c'); n++) await again.until(n);
    const names = again.events.map(nameOf);
    // Everything after the last event seen, once each, in order; nothing seen before is repeated.
    expect(names).not.toContain(lastName);
    expect(names.indexOf('resume-b')).toBeGreaterThanOrEqual(0);
    expect(names.indexOf('resume-b')).toBeLessThan(names.indexOf('resume-c'));
    expect(new Set(names).size).toBe(names.length);
    const cursors = again.events.map((e) => Number(e.id));
    expect(cursors.every((c, i) => c > Number(seen!.id) && (i === 0 || c > cursors[i - 1]!))).toBe(true);
    again.drop();
    await again.done;
  });

  it("streams Apollo's multipart subscriptions too: results as parts, resumed by $after, a revoked token's stream ended with its error", async () => {
    const { createApiToken } = await gqlData<{ createApiToken: { token: string; apiToken: { id: string } } }>(
      mesh.gatewayUrl,
      'mutation { createApiToken(name: "multipart-reader", scopes: ["read"]) { token apiToken { id } } }',
    );
    const auth = { authorization: `Bearer ${createApiToken.token}` };
    const first = await openMultipart(mesh.gatewayUrl, { query: WATCH }, auth);
    expect(first.res.headers.get('content-type')).toBe('multipart/mixed; boundary="-"; subscriptionSpec=1.0');
    for (let i = 0; first.parts.length === 0 && i < 20; i++) {
      await gqlData(mesh.gatewayUrl, CREATE, { name: `multipart-a${i}` });
      // A part is complete once the next boundary arrives: one more event flushes it.
      await gqlData(mesh.gatewayUrl, CREATE, { name: `multipart-flush${i}` });
      await first.until(1, 1_000).catch(() => undefined);
    }
    const seen = first.parts[0]!.payload as { data: { projectEvents: { cursor: string; project: { name: string } } } };
    expect(seen.data.projectEvents.cursor).toMatch(/^\d+$/);
    first.drop();
    await first.done;
    // Resumed by the client's own cursor: the events after it, the one seen not again.
    const again = await openMultipart(mesh.gatewayUrl, { query: WATCH, variables: { after: seen.data.projectEvents.cursor } }, auth);
    const resumed = (await again.until(1)).map((p) => (p.payload as typeof seen).data.projectEvents);
    expect(Number(resumed[0]!.cursor)).toBeGreaterThan(Number(seen.data.projectEvents.cursor));
    await gqlData(mesh.gatewayUrl, 'mutation ($id: ID!) { revokeApiToken(id: $id) { id } }', { id: createApiToken.apiToken.id });
    await again.done;
    expect(again.ended()).toBe(true);
    expect(again.parts.at(-1)).toMatchObject({ payload: null, errors: [{ extensions: { code: 'UNAUTHENTICATED' } }] });
  });

  it('holds the per-credential connection cap: a stream past it is refused 429 before anything streams', async () => {
    const { createApiToken } = await gqlData<{ createApiToken: { token: string } }>(mesh.gatewayUrl, 'mutation { createApiToken(name: "capped", scopes: ["read"]) { token } }');
    const auth = { authorization: `Bearer ${createApiToken.token}` };
    const open = [await openStream(mesh.gatewayUrl, { query: WATCH }, auth), await openMultipart(mesh.gatewayUrl, { query: WATCH }, auth)];
    expect(open.map((s) => s.res.status)).toEqual([200, 200]);
    const third = await openStream(mesh.gatewayUrl, { query: WATCH }, auth);
    expect(third.res.status).toBe(429);
    expect(((await third.res.json()) as { errors: { message: string }[] }).errors[0]!.message).toMatch(/too many connections: at most 2 per credential/);
    for (const s of open) {
      s.drop();
      await s.done;
    }
  });

  it('refuses a stream without a credential (401, nothing streamed) and ends one whose token is revoked', async () => {
    const anonymous = await openStream(mesh.gatewayUrl, { query: WATCH }, {});
    expect(anonymous.res.status).toBe(401);
    expect(((await anonymous.res.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe('UNAUTHENTICATED');

    const { createApiToken } = await gqlData<{ createApiToken: { token: string; apiToken: { id: string } } }>(
      mesh.gatewayUrl,
      'mutation { createApiToken(name: "sse-reader", scopes: ["read"]) { token apiToken { id } } }',
    );
    const stream = await openStream(mesh.gatewayUrl, { query: WATCH }, { authorization: `Bearer ${createApiToken.token}` });
    expect(stream.res.status).toBe(200);
    // A reader cannot create, but can watch: the stream is live once an admin's project shows up.
    for (let i = 0; stream.events.length === 0 && i < 20; i++) {
      await gqlData(mesh.gatewayUrl, CREATE, { name: `revoked-${i}` });
      await stream.until(1, 1_000).catch(() => undefined);
    }
    await gqlData(mesh.gatewayUrl, 'mutation ($id: ID!) { revokeApiToken(id: $id) { id } }', { id: createApiToken.apiToken.id });
    await stream.done;
    const tail = stream.events.slice(-2);
    expect(tail[0]).toMatchObject({ event: 'next', data: expect.stringContaining('"code":"UNAUTHENTICATED"') });
    expect(tail[1]).toEqual({ event: 'complete', data: '' });
    // The revoked token opens no new stream.
    expect((await openStream(mesh.gatewayUrl, { query: WATCH }, { authorization: `Bearer ${createApiToken.token}` })).res.status).toBe(401);
  });
});
