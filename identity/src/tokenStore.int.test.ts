import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { streams } from '@keelson/schema';
import { silentLogger } from '@keelson/service';
import { createTestDatabase, type TestDatabase } from '../../test/support/db';
import { certificateDigest } from './deviceCa';
import { openIdentity, type Identity } from './openIdentity';
import { TokenStore } from './tokenStore';

// A real token table on a throwaway database; each test takes a store of its own (an empty cache).
let db: TestDatabase;
let identity: Identity;
let store: TokenStore;

beforeAll(async () => {
  db = await createTestDatabase('keelson_tokenstore');
  identity = await openIdentity({ databaseUrl: db.url, log: silentLogger() });
});
afterAll(async () => {
  await identity?.close();
  await db?.drop();
});
beforeEach(() => {
  store = new TokenStore(identity.state.dataSource, identity.state.events);
});
afterEach(() => jest.restoreAllMocks());

const admin = { subject: 'admin', kind: 'jwt' as const };
const sql = (text: string, params: unknown[] = []) => identity.state.dataSource.query(text, params);
const revokeBehindItsBack = (id: string) => sql('UPDATE api_tokens SET revoked_at = now() WHERE id = $1', [id]);
const eventsOf = async (id: string) =>
  (await sql('SELECT type, payload, actor FROM events WHERE stream = $1 AND key = $2 ORDER BY seq', [streams.identity, id])) as { type: string; payload: unknown; actor: unknown }[];
/** Moves this process's clock `ms` ahead of Postgres's. */
const clockAhead = (ms: number) => {
  const real = Date.now.bind(Date);
  jest.spyOn(Date, 'now').mockImplementation(() => real() + ms);
};
const lastUsed = async (id: string) => ((await sql('SELECT last_used_at FROM api_tokens WHERE id = $1', [id])) as { last_used_at: Date | null }[])[0]!.last_used_at;
async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 100 && !(await check()); i++) await sleep(20);
}

describe('TokenStore events', () => {
  it('records TOKEN_CREATED and TOKEN_REVOKED keyed by the token, with its name and the actor, never the secret', async () => {
    const { token, record } = await store.create({ name: 'ci', scopes: ['read'] }, admin);
    await store.revoke(record.id, admin);
    const events = await eventsOf(record.id);
    expect(events).toEqual([
      { type: 'TOKEN_CREATED', payload: { tokenId: record.id, name: 'ci' }, actor: admin },
      { type: 'TOKEN_REVOKED', payload: { tokenId: record.id, name: 'ci' }, actor: admin },
    ]);
    expect(JSON.stringify(events)).not.toContain(token.slice(4));
  });

  it('records no actor when none is given', async () => {
    const { record } = await store.create({ name: 'anon', scopes: ['read'] }, null);
    await store.revoke(record.id, null);
    expect((await eventsOf(record.id)).map((e) => e.actor)).toEqual([null, null]);
  });
});

describe('TokenStore cache', () => {
  it('answers a token it verified a moment ago without asking again, until it forgets that token alone', async () => {
    const a = await store.create({ name: 'a', scopes: ['read'] }, admin);
    const b = await store.create({ name: 'b', scopes: ['read'] }, admin);
    await store.authenticate(a.token);
    await store.authenticate(b.token);
    await revokeBehindItsBack(a.record.id);
    await revokeBehindItsBack(b.record.id);
    await expect(store.authenticate(a.token)).resolves.toMatchObject({ tokenId: a.record.id });
    store.forget(a.record.id);
    await expect(store.authenticate(a.token)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    await expect(store.authenticate(b.token)).resolves.toMatchObject({ tokenId: b.record.id });
  });

  it('asks again once the few seconds are over', async () => {
    const { token, record } = await store.create({ name: 'c', scopes: ['read'] }, admin);
    await store.authenticate(token);
    await revokeBehindItsBack(record.id);
    clockAhead(5_001);
    await expect(store.authenticate(token)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('refuses a token whose expiry passes while it is remembered', async () => {
    const { token, record } = await store.create({ name: 'd', scopes: ['read'] }, admin);
    await sql("UPDATE api_tokens SET expires_at = now() + interval '2 seconds' WHERE id = $1", [record.id]);
    await store.authenticate(token);
    await sql("UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE id = $1", [record.id]);
    clockAhead(3_000);
    await expect(store.authenticate(token)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('keeps what it remembers of one token when it verifies another', async () => {
    const a = await store.create({ name: 'e', scopes: ['read'] }, admin);
    const b = await store.create({ name: 'f', scopes: ['read'] }, admin);
    await store.authenticate(a.token);
    await revokeBehindItsBack(a.record.id);
    await store.authenticate(b.token);
    await expect(store.authenticate(a.token)).resolves.toMatchObject({ tokenId: a.record.id });
  });
});

describe('TokenStore devices', () => {
  const enroll = async (name: string, expiresAt = new Date(Date.now() + 86_400_000)) => {
    const der = randomBytes(200);
    const record = await store.enrollDevice({ name, scopes: ['read'], certificateSha256: certificateDigest(der), expiresAt }, admin);
    return { der, record };
  };

  it('answers a device it verified a moment ago without asking again, and asks again after', async () => {
    const { der, record } = await enroll('laptop');
    await expect(store.authenticateDevice(der)).resolves.toMatchObject({ subject: 'device:laptop', tokenId: record.id });
    await expect(store.authenticateDevice(randomBytes(200))).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    await revokeBehindItsBack(record.id);
    await expect(store.authenticateDevice(der)).resolves.toMatchObject({ subject: 'device:laptop' });
    clockAhead(5_001);
    await expect(store.authenticateDevice(der)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('refuses a device whose certificate ends while it is remembered', async () => {
    const { der, record } = await enroll('phone', new Date(Date.now() + 2_000));
    await store.authenticateDevice(der);
    await sql("UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE id = $1", [record.id]);
    clockAhead(3_000);
    await expect(store.authenticateDevice(der)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('keeps what it remembers of one device when it verifies another', async () => {
    const a = await enroll('tablet');
    const b = await enroll('watch');
    await store.authenticateDevice(a.der);
    await revokeBehindItsBack(a.record.id);
    await store.authenticateDevice(b.der);
    await expect(store.authenticateDevice(a.der)).resolves.toMatchObject({ subject: 'device:tablet' });
  });
});

describe('TokenStore.live', () => {
  it('answers no ids without a query', async () => {
    const query = jest.spyOn(identity.state.dataSource, 'query');
    await expect(store.live([])).resolves.toEqual(new Set());
    expect(query).not.toHaveBeenCalled();
  });
});

describe('TokenStore last use', () => {
  it('writes last_used_at at most once a minute per token', async () => {
    const { token, record } = await store.create({ name: 'g', scopes: ['read'] }, admin);
    await store.authenticate(token);
    await until(async () => (await lastUsed(record.id)) !== null);
    expect(await lastUsed(record.id)).not.toBeNull();
    await sql('UPDATE api_tokens SET last_used_at = NULL WHERE id = $1', [record.id]);
    clockAhead(59_000);
    await store.authenticate(token);
    await sleep(300);
    expect(await lastUsed(record.id)).toBeNull();
    jest.restoreAllMocks();
    clockAhead(60_001);
    await store.authenticate(token);
    await until(async () => (await lastUsed(record.id)) !== null);
    expect(await lastUsed(record.id)).not.toBeNull();
  });
});
