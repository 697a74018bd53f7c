import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPgTimeouts, silentLogger } from '@keelson/service';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db';
import { openIdentity } from '../openIdentity';
import { runTokenCli } from './tokenCli';

describe('npm run token', () => {
  let db: TestDatabase;
  const home = mkdtempSync(join(tmpdir(), 'keelson-tokencli-'));
  const run = async (...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runTokenCli(argv, { databaseUrl: db.url, pg: defaultPgTimeouts, home }, { out: (l) => out.push(l), err: (l) => err.push(l) });
    return { code, out, err: err.join('\n') };
  };

  beforeAll(async () => {
    db = await createTestDatabase('keelson_tokencli');
  });
  afterAll(async () => {
    await db?.drop();
    rmSync(home, { recursive: true, force: true });
  });

  it('creates a token whose secret is printed once on stdout, lists it without the secret, and revokes it', async () => {
    const created = await run('create', 'deploy', 'bot', '--scopes', 'read,operate', '--expires-days', '7');
    expect(created.code).toBe(0);
    expect(created.out).toEqual([expect.stringMatching(/^kmt_[A-Za-z0-9_-]{43}$/)]);
    expect(created.err).toMatch(/^created token [0-9a-f-]{36} "deploy bot" \(read, operate\), expires .*shown once/);
    const token = created.out[0]!;

    const identity = await openIdentity({ databaseUrl: db.url, log: silentLogger() });
    try {
      expect(await identity.tokens.authenticate(token)).toMatchObject({ subject: 'token:deploy bot', kind: 'token', scopes: ['read', 'operate'] });
      const listed = await run('list');
      expect(listed.out).toHaveLength(1);
      expect(listed.out[0]).toMatch(/\tdeploy bot\ttoken\tread,operate\tlive\t/);
      expect(listed.out.join('\n')).not.toContain(token);

      const id = listed.out[0]!.split('\t')[0]!;
      const revoked = await run('revoke', id);
      expect(revoked).toMatchObject({ code: 0, out: [expect.stringMatching(new RegExp(`^${id}\\trevoked `))] });
      // A fresh process (no cache) refuses it at once.
      const fresh = await openIdentity({ databaseUrl: db.url, log: silentLogger() });
      try {
        await expect(fresh.tokens.authenticate(token)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
      } finally {
        await fresh.close();
      }
      expect((await run('list')).out[0]).toMatch(/\trevoked /);
    } finally {
      await identity.close();
    }
  });

  it('enrolls a device: the mesh CA made once, a client certificate it signed and a private key (0600), a device caller for that certificate until revoked', async () => {
    const first = await run('enroll-device', 'laptop-1', '--scopes', 'read,write', '--expires-days', '30');
    expect(first).toMatchObject({ code: 0, out: [join(home, 'devices', 'laptop-1.crt'), join(home, 'devices', 'laptop-1.key')] });
    expect(first.err).toMatch(/^made the mesh CA for device certificates: .*device-ca\/ca\.crt\nenrolled device ([0-9a-f-]{36}) "laptop-1" \(read, write\), its certificate valid until /);
    const id = /enrolled device ([0-9a-f-]{36})/.exec(first.err)![1]!;
    const second = await run('enroll-device', 'phone', '--scopes', 'read', '--out', join(home, 'elsewhere'));
    expect(second.err).not.toMatch(/made the mesh CA/);
    expect(second.out).toEqual([join(home, 'elsewhere', 'phone.crt'), join(home, 'elsewhere', 'phone.key')]);

    const ca = new X509Certificate(readFileSync(join(home, 'device-ca', 'ca.crt')));
    const cert = new X509Certificate(readFileSync(first.out[0]!));
    expect({ ca: ca.ca, issued: cert.checkIssued(ca), signed: cert.verify(ca.publicKey), subject: cert.subject, days: Math.round((Date.parse(cert.validTo) - Date.now()) / 86_400_000) })
      .toEqual({ ca: true, issued: true, signed: true, subject: 'CN=laptop-1\nO=Keelson Mesh device', days: 30 });
    expect([statSync(first.out[1]!).mode & 0o777, statSync(join(home, 'device-ca', 'ca.key')).mode & 0o777]).toEqual([0o600, 0o600]);
    expect(readFileSync(first.out[1]!, 'utf8')).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    expect((await run('list')).out.filter((l) => l.includes('\tdevice\t'))).toEqual([expect.stringMatching(/\tphone\tdevice\tread\tlive\t/), expect.stringMatching(/\tlaptop-1\tdevice\tread,write\tlive\t/)]);

    const identity = await openIdentity({ databaseUrl: db.url, log: silentLogger() });
    try {
      expect(await identity.tokens.authenticateDevice(cert.raw)).toEqual({ subject: 'device:laptop-1', kind: 'token', scopes: ['read', 'write'], tokenId: id });
      // A certificate is not a bearer secret, and a bearer token's digest is no device.
      await expect(identity.tokens.authenticateDevice(Buffer.from('kmt_' + 'a'.repeat(43)))).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
      expect((await run('revoke', id)).code).toBe(0);
      const fresh = await openIdentity({ databaseUrl: db.url, log: silentLogger() });
      try {
        await expect(fresh.tokens.authenticateDevice(cert.raw)).rejects.toMatchObject({ code: 'UNAUTHENTICATED', message: expect.stringMatching(/enrolled device/) });
      } finally {
        await fresh.close();
      }
    } finally {
      await identity.close();
    }
  });

  it('refuses bad usage with exit code 2, the reason and the usage, and changes nothing', async () => {
    const before = (await run('list')).out;
    for (const argv of [[], ['mint'], ['create', 'x'], ['create', '--scopes', 'read'], ['create', 'x', '--scopes', 'root'], ['create', 'x', '--scopes', 'read', '--expires-days', '0'], ['revoke'], ['revoke', 'nope'], ['enroll-device', '../x', '--scopes', 'read'], ['enroll-device', 'x']]) {
      const res = await run(...argv);
      expect({ argv, code: res.code, usage: res.err.includes('usage:') || res.err.includes('not a token id') }).toEqual({ argv, code: 2, usage: true });
    }
    expect((await run('list')).out).toEqual(before);
    const unknown = await run('revoke', '00000000-0000-4000-8000-000000000000');
    expect(unknown).toMatchObject({ code: 1, err: expect.stringMatching(/no API token with id/) });
  });
});
