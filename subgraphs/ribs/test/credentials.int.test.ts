import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRibHost } from '@keelson/host';
import { staticConfigPort } from '@keelson/host-doubles';
import { silentLogger } from '@keelson/service';
import type { Rib } from '@keelson/ribs-contract';
import { runCredentialCli } from '../src/cli/credentialCli';
import { decodeKey, loadCredentialKey } from '../src/credential/credentialKey';
import { PgCredentialStore } from '../src/credential/pgCredentialStore';
import { createTestDatabase, openRibsDb, type RibsDb, type TestDatabase } from './support/ribsDb';

describe('rib credentials in Postgres', () => {
  let db: TestDatabase;
  let ribsDb: RibsDb;
  let home: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    ribsDb = await openRibsDb(db.url);
  });
  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'keelson-home-'));
  });
  afterEach(() => rmSync(home, { recursive: true, force: true }));
  afterAll(async () => {
    await ribsDb?.close();
    await db?.drop();
  });

  const fileStore = () => new PgCredentialStore(ribsDb.dataSource, () => loadCredentialKey({ home }));
  const raw = async (account: string) =>
    ((await ribsDb.dataSource.query('SELECT ciphertext, iv, auth_tag, key_id FROM rib_credentials WHERE account = $1', [account])) as { ciphertext: Buffer; key_id: string }[])[0]!;

  it('stores ciphertext, never the plaintext, and reads it back', async () => {
    const store = fileStore();
    const secret = `super-secret-${randomBytes(8).toString('hex')}`;
    await store.set('rib_notes_signing-key', secret);
    const row = await raw('rib_notes_signing-key');
    expect(row.ciphertext.includes(Buffer.from(secret))).toBe(false);
    expect(row.ciphertext.toString('utf8')).not.toContain(secret);
    const dump = JSON.stringify(await ribsDb.dataSource.query('SELECT * FROM rib_credentials'));
    expect(dump).not.toContain(secret);
    expect(await store.get('rib_notes_signing-key')).toBe(secret);
    expect(await store.get('rib_notes_absent')).toBeUndefined();
  });

  it('creates a 0600 key file on first use, not before, and reuses it', async () => {
    const store = fileStore();
    const keyFile = join(home, 'credentials.key');
    expect(existsSync(keyFile)).toBe(false);
    await store.get('rib_notes_nothing-yet');
    expect(existsSync(keyFile)).toBe(false); // nothing stored: nothing to decrypt, no key needed
    await store.set('rib_notes_a', 'one');
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    const key = readFileSync(keyFile, 'utf8');
    expect(await fileStore().get('rib_notes_a')).toBe('one');
    expect(readFileSync(keyFile, 'utf8')).toBe(key);
  });

  it('refuses a key file others can read', async () => {
    await fileStore().set('rib_notes_a', 'one');
    chmodSync(join(home, 'credentials.key'), 0o644);
    await expect(fileStore().get('rib_notes_a')).rejects.toThrow(/readable by others \(mode 644\); run chmod 600/);
  });

  it('binds each ciphertext to its account: a row copied to another account does not open', async () => {
    const store = fileStore();
    await store.set('rib_notes_token', 'for notes only');
    await ribsDb.dataSource.query(
      `INSERT INTO rib_credentials (account, ciphertext, iv, auth_tag, key_id) SELECT 'rib_projects_token', ciphertext, iv, auth_tag, key_id FROM rib_credentials WHERE account = 'rib_notes_token'`,
    );
    await expect(store.get('rib_projects_token')).rejects.toThrow(/cannot be decrypted: the stored bytes do not authenticate/);
  });

  it('names the key mismatch when the configured key is not the one a secret was sealed with', async () => {
    const first = decodeKey(randomBytes(32).toString('hex'), 'KEELSON_CREDENTIALS_KEY');
    const second = decodeKey(randomBytes(32).toString('base64'), 'KEELSON_CREDENTIALS_KEY');
    await new PgCredentialStore(ribsDb.dataSource, async () => first).set('rib_notes_k', 'v');
    expect((await raw('rib_notes_k')).key_id).toBe(first.id);
    await expect(new PgCredentialStore(ribsDb.dataSource, async () => second).get('rib_notes_k')).rejects.toThrow(
      new RegExp(`sealed with key ${first.id}, the configured key \\(KEELSON_CREDENTIALS_KEY\\) is ${second.id}`),
    );
    expect(() => decodeKey('too-short', 'KEELSON_CREDENTIALS_KEY')).toThrow(/32-byte key/);
  });

  it('lets a rib read only its own secrets through the host, read-only', async () => {
    const store = fileStore();
    await store.set('rib_alpha_api', 'alpha secret');
    await store.set('rib_beta_api', 'beta secret');
    const seen: Record<string, unknown> = {};
    const probe = (id: string): Rib => ({
      id,
      displayName: id,
      async authStatus(ctx) {
        seen[id] = await ctx.getCredential!('api');
        seen[`${id}:other`] = await ctx.getCredential!(id === 'alpha' ? 'beta_api' : 'alpha_api');
        return { authenticated: true };
      },
    });
    const host = await createRibHost({ available: { alpha: probe('alpha'), beta: probe('beta') }, env: {}, home, logger: silentLogger(), config: staticConfigPort({}), credentials: store });
    try {
      await host.manifest();
      expect(seen).toEqual({ alpha: 'alpha secret', 'alpha:other': undefined, beta: 'beta secret', 'beta:other': undefined });
      expect(Object.keys(host.context('alpha')!)).not.toContain('setCredential');
    } finally {
      await host.dispose();
    }
  });

  it('is set by operators with `npm run credential`, which prints accounts and never secrets', async () => {
    const out: string[] = [];
    const config = { databaseUrl: db.url, settings: { home, projectsUrl: 'http://127.0.0.1:1/graphql', env: {} } };
    const io = (secret: string) => ({ readSecret: async () => secret, out: (line: string) => out.push(line) });
    expect(await runCredentialCli(['set', 'notes', 'signing-key'], config, io('from the cli'))).toBe(0);
    expect(await fileStore().get('rib_notes_signing-key')).toBe('from the cli');
    expect(await runCredentialCli(['list', 'notes'], config, io(''))).toBe(0);
    expect(out[0]).toBe('stored rib_notes_signing-key (encrypted at rest)');
    expect(out[1]).toMatch(/^rib_notes_signing-key\tkey [0-9a-f]{16}\tupdated \S+$/m);
    expect(out[1]).not.toMatch(/rib_alpha|rib_beta/);
    expect(out.join('\n')).not.toContain('from the cli');
    expect(await runCredentialCli(['delete', 'notes', 'signing-key'], config, io(''))).toBe(0);
    expect(await fileStore().get('rib_notes_signing-key')).toBeUndefined();
    await expect(runCredentialCli(['set', 'Not_A_Rib', 'x'], config, io('s'))).rejects.toThrow(/ribId: .*kebab-case/);
    await expect(runCredentialCli(['set', 'notes', 'x'], config, io(''))).rejects.toThrow(/no secret on stdin/);
    expect(await runCredentialCli([], config, io(''))).toBe(2);
  });
});
