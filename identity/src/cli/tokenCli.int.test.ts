import { defaultPgTimeouts, silentLogger } from '@keelson/service';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db';
import { openIdentity } from '../openIdentity';
import { runTokenCli } from './tokenCli';

describe('npm run token', () => {
  let db: TestDatabase;
  const run = async (...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runTokenCli(argv, { databaseUrl: db.url, pg: defaultPgTimeouts }, { out: (l) => out.push(l), err: (l) => err.push(l) });
    return { code, out, err: err.join('\n') };
  };

  beforeAll(async () => {
    db = await createTestDatabase('keelson_tokencli');
  });
  afterAll(async () => {
    await db?.drop();
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
      expect(listed.out[0]).toMatch(/\tdeploy bot\tread,operate\tlive\t/);
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

  it('refuses bad usage with exit code 2, the reason and the usage, and changes nothing', async () => {
    const before = (await run('list')).out;
    for (const argv of [[], ['mint'], ['create', 'x'], ['create', '--scopes', 'read'], ['create', 'x', '--scopes', 'root'], ['create', 'x', '--scopes', 'read', '--expires-days', '0'], ['revoke'], ['revoke', 'nope']]) {
      const res = await run(...argv);
      expect({ argv, code: res.code, usage: res.err.includes('usage:') || res.err.includes('not a token id') }).toEqual({ argv, code: 2, usage: true });
    }
    expect((await run('list')).out).toEqual(before);
    const unknown = await run('revoke', '00000000-0000-4000-8000-000000000000');
    expect(unknown).toMatchObject({ code: 1, err: expect.stringMatching(/no API token with id/) });
  });
});
