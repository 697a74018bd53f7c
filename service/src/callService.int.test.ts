import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ASSERTION_HEADER } from '@keelson/schema';
import { AssertionKey } from './auth/assertionKey';
import { serviceIdentity } from './auth/serviceIdentity';
import { serviceCaller } from './callService';

const key = AssertionKey.random();
const identity = serviceIdentity(key, 'test');
let lastCaller: unknown;

// A real HTTP server on loopback answering as a GraphQL service would, per operation name.
let server: Server;
let url: string;
beforeAll(async () => {
  server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const field = (JSON.parse(body) as { query: string }).query.replace(/[{}\s]/g, '');
    lastCaller = await key.verify(req.headers[ASSERTION_HEADER] as string | undefined).catch(() => undefined);
    const send = (status: number, json: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
    if (field === 'ok') return send(200, { data: { ok: 42 } });
    if (field === 'missing') return send(200, { errors: [{ message: 'no such project', extensions: { code: 'NOT_FOUND' } }] });
    if (field === 'invalid') return send(400, { errors: [{ message: 'Cannot query field "nope"', extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }] });
    if (field === 'broken') return res.writeHead(502).end('bad gateway');
    // 'hang': never answers.
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('serviceCaller', () => {
  it('returns data, and keeps registry codes and the code the service answered with', async () => {
    const call = serviceCaller('the test service', url, { identity });
    await expect(call<{ ok: number }>('{ ok }')).resolves.toEqual({ ok: 42 });
    // Every call carries the calling service's signed assertion.
    expect(lastCaller).toMatchObject({ subject: 'service:test', kind: 'service' });
    await expect(call('{ missing }')).rejects.toMatchObject({ code: 'NOT_FOUND', message: 'no such project', details: { upstreamCode: 'NOT_FOUND' } });
    await expect(call('{ invalid }')).rejects.toMatchObject({ code: 'UPSTREAM_FAILED', details: { upstreamCode: 'GRAPHQL_VALIDATION_FAILED' } });
    await expect(call('{ broken }')).rejects.toMatchObject({ code: 'UPSTREAM_FAILED', message: 'the test service answered 502 without data' });
  });

  it("ends a call at the caller's signal or its timeout, as SERVICE_UNAVAILABLE naming the service", async () => {
    const controller = new AbortController();
    const started = Date.now();
    const pending = serviceCaller('the test service', url, { identity })('{ hang }', {}, { signal: controller.signal });
    setTimeout(() => controller.abort(), 100);
    await expect(pending).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(/^the test service at .* is unreachable/) });
    expect(Date.now() - started).toBeLessThan(5_000);
    await expect(serviceCaller('the test service', url, { timeoutMs: 150, identity })('{ hang }')).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    await expect(serviceCaller('nobody', 'http://127.0.0.1:1/graphql', { identity })('{ ok }')).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
  });
});
