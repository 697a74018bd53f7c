import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureDeviceCa, issueDeviceCertificate, runTokenCli } from '@keelson/identity';
import { defaultPgTimeouts } from '@keelson/service';
import WebSocket from 'ws';
import { startTestMesh, type TestMesh } from '../support/mesh';
import { quietTemporalRuntime } from '../support/temporalServer';

quietTemporalRuntime();

// Device mode (seed 002): off loopback, only enrolled devices — a client certificate from the mesh
// CA, mapped to a caller with scopes — over HTTPS, WSS and SSE; everything else refused at the TLS
// handshake, before any GraphQL runs; revocation ends a device at once; loopback keeps tokens.

/** This machine's first non-loopback IPv4 address: where "off loopback" is dialled from and to. */
function lanAddress(): string {
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  throw new Error('this test needs a non-loopback IPv4 interface to dial the gateway off loopback');
}

interface Identity {
  cert?: string | Buffer;
  key?: string | Buffer;
  authorization?: string;
}

interface Answer {
  status: number;
  body: { data?: Record<string, unknown> | null; errors?: { message: string; extensions?: { code?: string } }[] };
}

describe('device mode: enrolled client certificates off loopback', () => {
  const ip = lanAddress();
  const dir = mkdtempSync(join(tmpdir(), 'keelson-devices-'));
  const home = join(dir, 'home');
  let mesh: TestMesh;
  let serverCa: Buffer;
  let port: number;
  const devices: Record<string, { cert: Buffer; key: Buffer; id: string }> = {};

  const tokenCli = async (...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runTokenCli(argv, { databaseUrl: mesh.rawEnv.DATABASE_URL!, pg: defaultPgTimeouts, home }, { out: (l) => out.push(l), err: (l) => err.push(l) });
    return { code, out, err: err.join('\n') };
  };
  const enroll = async (name: string, scopes: string) => {
    const res = await tokenCli('enroll-device', name, '--scopes', scopes);
    expect(res.code).toBe(0);
    devices[name] = { cert: readFileSync(res.out[0]!), key: readFileSync(res.out[1]!), id: /enrolled device ([0-9a-f-]{36})/.exec(res.err)![1]! };
    return devices[name]!;
  };

  /** One GraphQL POST over HTTPS to `host`, as `who`; rejects when the connection is refused. */
  const post = (host: string, query: string, who: Identity, extra: RequestOptions = {}): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const req = httpsRequest(
        { host, port, path: '/graphql', method: 'POST', ca: serverCa, ...(who.cert ? { cert: who.cert, key: who.key } : {}), headers: { 'content-type': 'application/json', ...(who.authorization ? { authorization: who.authorization } : {}) }, agent: false, ...extra },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Answer['body'] }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ query }));
    });

  /** A graphql-ws socket over WSS as `who`, acknowledged (or the close that refused it). */
  const socketAs = (who: Identity) =>
    new Promise<{ socket: WebSocket; closed: Promise<number> }>((resolve, reject) => {
      const socket = new WebSocket(`wss://${ip}:${port}/graphql`, 'graphql-transport-ws', { ca: serverCa, ...(who.cert ? { cert: who.cert, key: who.key } : {}) });
      const closed = new Promise<number>((r) => socket.once('close', (code) => r(code)));
      socket.once('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: who.authorization ? { authorization: who.authorization } : {} })));
      socket.once('message', (data) => (JSON.parse(String(data)).type === 'connection_ack' ? resolve({ socket, closed }) : reject(new Error(String(data)))));
      socket.once('error', reject);
      void closed.then((code) => reject(new Error(`closed ${code}`)));
    });

  beforeAll(async () => {
    // The mesh CA exists before the gateway starts (the first enrollment would make it too).
    await ensureDeviceCa(home);
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'server.key'), '-out', join(dir, 'server.crt'), '-days', '1', '-subj', '/CN=mesh', '-addext', `subjectAltName=IP:127.0.0.1,IP:${ip}`], { stdio: 'ignore' });
    serverCa = readFileSync(join(dir, 'server.crt'));
    mesh = await startTestMesh({
      KEELSON_HOME: home,
      KEELSON_HOST: '0.0.0.0',
      KEELSON_PUBLIC_HOSTS: ip,
      KEELSON_TLS_CERT: join(dir, 'server.crt'),
      KEELSON_TLS_KEY: join(dir, 'server.key'),
      KEELSON_TLS_CLIENT_CA: join(home, 'device-ca', 'ca.crt'),
    });
    port = Number(new URL(mesh.gatewayUrl).port);
    await enroll('laptop', 'read,write');
  });
  afterAll(async () => {
    await mesh?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves an enrolled device over HTTPS, WSS and SSE as that device, whatever bearer it also sends; loopback keeps tokens', async () => {
    const laptop = devices.laptop!;
    // README "Put it on a network": the device's viewer.
    expect(await post(ip, '{ viewer { subject scopes } }', laptop)).toEqual({ status: 200, body: { data: { viewer: { subject: 'device:laptop', scopes: ['read', 'write'] } } } });
    const created = await post(ip, 'mutation { createProject(input: { name: "from-the-laptop" }) { name } }', laptop);
    expect(created).toEqual({ status: 200, body: { data: { createProject: { name: 'from-the-laptop' } } } });

    // The certificate decides off loopback: the admin token beside it grants nothing more.
    const admin = `Bearer ${mesh.adminToken!.token}`;
    const tokens = await post(ip, '{ apiTokens { id } }', { ...laptop, authorization: admin });
    expect({ status: tokens.status, code: tokens.body.errors?.[0]?.extensions?.code }).toEqual({ status: 403, code: 'FORBIDDEN' });
    // On loopback the same token is an admin, with no certificate.
    const local = await post('127.0.0.1', '{ viewer { subject } }', { authorization: admin });
    expect(local).toEqual({ status: 200, body: { data: { viewer: { subject: 'token:admin (npm start)' } } } });

    // WSS: the socket stands for the device (no authorization in connection_init).
    const { socket } = await socketAs(laptop);
    const events: string[] = [];
    socket.on('message', (data) => {
      const message = JSON.parse(String(data)) as { type: string; payload?: { data?: { projectEvents?: { project: { name: string } } } } };
      if (message.type === 'next') events.push(message.payload!.data!.projectEvents!.project.name);
    });
    socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription { projectEvents { type project { name } } }' } }));
    // SSE: the gateway's bridge carries the device (it sent no bearer).
    const sse = await new Promise<{ status: number; text: () => string; close: () => void }>((resolve, reject) => {
      const req = httpsRequest(
        { host: ip, port, path: '/graphql', method: 'POST', ca: serverCa, cert: laptop.cert, key: laptop.key, agent: false, headers: { 'content-type': 'application/json', accept: 'text/event-stream' } },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          resolve({ status: res.statusCode ?? 0, text: () => text, close: () => req.destroy() });
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ query: 'subscription { projectEvents { type project { name } } }' }));
    });
    expect(sse.status).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
    expect((await post(ip, 'mutation { createProject(input: { name: "watched" }) { id } }', laptop)).body.errors).toBeUndefined();
    const deadline = Date.now() + 10_000;
    while ((!events.includes('watched') || !sse.text().includes('"watched"')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    socket.close();
    sse.close();
    expect({ ws: events.includes('watched'), sse: /event: next\ndata: .*"watched"/.test(sse.text()) }).toEqual({ ws: true, sse: true });
  });

  it('refuses at the TLS handshake, before any GraphQL runs: no certificate, a bearer token alone, a foreign CA, an expired certificate', async () => {
    const admin = `Bearer ${mesh.adminToken!.token}`;
    const foreignCa = await ensureDeviceCa(join(dir, 'elsewhere'));
    const foreign = await issueDeviceCertificate(foreignCa, 'laptop', 30);
    // Signed by the mesh CA, but its validity ended 30 seconds ago.
    const expired = await issueDeviceCertificate(await ensureDeviceCa(home), 'old-laptop', 30 / 86_400);
    const attempts: Record<string, Identity> = {
      'no certificate': {},
      'a bearer token alone': { authorization: admin },
      'a foreign CA': { cert: foreign.certPem, key: foreign.keyPem },
      'an expired certificate': { cert: expired.certPem, key: expired.keyPem },
    };
    const outcomes: Record<string, string> = {};
    for (const [name, who] of Object.entries(attempts)) {
      outcomes[name] = await post(ip, 'mutation { createProject(input: { name: "should-not-exist" }) { id } }', who).then(
        (answer) => `answered ${answer.status}`,
        (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' || /socket hang up|alert/i.test(err.message) ? 'refused' : `${err.code}: ${err.message}`),
      );
      outcomes[`${name} (WSS)`] = await socketAs(who).then(
        ({ socket }) => {
          socket.close();
          return 'acknowledged';
        },
        () => 'refused',
      );
    }
    expect(outcomes).toEqual(Object.fromEntries(Object.keys(attempts).flatMap((n) => [[n, 'refused'], [`${n} (WSS)`, 'refused']])));
    // Nothing ran: no project of that name.
    const listed = await post('127.0.0.1', '{ projects { name } }', { authorization: admin });
    expect((listed.body.data?.projects as { name: string }[]).map((p) => p.name).sort()).toEqual(['from-the-laptop', 'watched']);
  });

  it('revokes a device at once: its requests are refused and its open socket is closed', async () => {
    const tablet = await enroll('tablet', 'read');
    expect(await post(ip, '{ viewer { subject } }', tablet)).toEqual({ status: 200, body: { data: { viewer: { subject: 'device:tablet' } } } });
    const { closed } = await socketAs(tablet);
    expect((await tokenCli('revoke', tablet.id)).code).toBe(0);
    expect(await Promise.race([closed, new Promise((r) => setTimeout(() => r('still open'), 10_000))])).toBe(4401);
    const after = await post(ip, '{ projects { id } }', tablet);
    expect({ status: after.status, code: after.body.errors?.[0]?.extensions?.code }).toEqual({ status: 401, code: 'UNAUTHENTICATED' });
    // The other device is untouched.
    expect(await post(ip, '{ viewer { subject } }', devices.laptop!)).toEqual({ status: 200, body: { data: { viewer: { subject: 'device:laptop' } } } });
  });
});
