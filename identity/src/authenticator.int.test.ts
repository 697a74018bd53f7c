import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@keelson/service';
import { createTestDatabase, type TestDatabase } from '../../test/support/db';
import { startIdentityProvider, type IdentityProvider } from '../../test/support/identityProvider';
import { ensureAdminToken, tokenFilePath } from './bootstrapToken';
import { openIdentity, jwtSettingsFromEnv, type Identity } from './openIdentity';

// A real identity domain on a throwaway database, and a real JWKS endpoint on loopback.
let db: TestDatabase;
let identity: Identity;
let withJwt: Identity;
let idp: IdentityProvider;
const home = mkdtempSync(join(tmpdir(), 'keelson-identity-'));

beforeAll(async () => {
  db = await createTestDatabase('keelson_identity');
  idp = await startIdentityProvider();
  identity = await openIdentity({ databaseUrl: db.url, log: silentLogger() });
  withJwt = await openIdentity({ databaseUrl: db.url, log: silentLogger(), jwt: { jwksUrl: idp.url, issuer: idp.issuer, audience: idp.audience } });
});

afterAll(async () => {
  await withJwt?.close();
  await identity?.close();
  await idp?.stop();
  await db?.drop();
  rmSync(home, { recursive: true, force: true });
});

const admin = { subject: 'admin', kind: 'jwt' as const };
const now = () => Math.floor(Date.now() / 1000);

describe('Authenticator', () => {
  it('refuses a missing header, a header that is not a bearer, and says how to send one', async () => {
    const auth = identity.authenticator;
    await expect(auth.authenticate(undefined)).rejects.toMatchObject({ code: 'UNAUTHENTICATED', message: 'authentication required: send authorization: Bearer <token> (README "Security")' });
    await expect(auth.authenticate('')).rejects.toMatchObject({ code: 'UNAUTHENTICATED', message: expect.stringContaining('authentication required') });
    for (const header of ['Basic abc', 'Bearer', 'Bearer a b', 'xBearer abc']) {
      await expect(auth.authenticate(header)).rejects.toMatchObject({ code: 'UNAUTHENTICATED', message: 'the authorization header must be "Bearer <token>"' });
    }
  });

  it('takes an API token whatever the case of "bearer" and trailing spaces; without a JWT issuer anything else is no API token', async () => {
    const { token, record } = await identity.tokens.create({ name: 'auth-ok', scopes: ['read'] }, admin);
    const caller = { subject: 'token:auth-ok', kind: 'token', scopes: ['read'], tokenId: record.id };
    await expect(identity.authenticator.authenticate(`Bearer ${token}`)).resolves.toEqual({ caller });
    await expect(identity.authenticator.authenticate(`bearer   ${token}  `)).resolves.toEqual({ caller });
    await expect(identity.authenticator.authenticate('Bearer a.b.c')).rejects.toMatchObject({ code: 'UNAUTHENTICATED', message: 'the bearer token is not a valid API token' });
  });

  it('with a JWT issuer: refuses a bearer that is neither, and answers a JWT with its expiry', async () => {
    await expect(withJwt.authenticator.authenticate('Bearer not-a-jwt')).rejects.toMatchObject({ message: 'the bearer token is neither an API token nor a JWT' });
    await expect(withJwt.authenticator.authenticate('Bearer a.b.c.d')).rejects.toMatchObject({ message: 'the bearer token is neither an API token nor a JWT' });
    const exp = now() + 600;
    const jwt = await idp.token({ scope: 'read write' }).setSubject('alice').setIssuedAt().setExpirationTime(exp).sign(idp.key);
    await expect(withJwt.authenticator.authenticate(`Bearer ${jwt}`)).resolves.toEqual({ caller: { subject: 'alice', kind: 'jwt', scopes: ['read', 'write'] }, expiresAt: exp * 1000 });
    const { token, record } = await withJwt.tokens.create({ name: 'beside-jwt', scopes: ['read'] }, admin);
    await expect(withJwt.authenticator.authenticate(`Bearer ${token}`)).resolves.toEqual({ caller: { subject: 'token:beside-jwt', kind: 'token', scopes: ['read'], tokenId: record.id } });
  });

  it('tells its listeners of a token revoked in another process, until they unsubscribe, and rechecks live ids', async () => {
    const { record } = await identity.tokens.create({ name: 'watched', scopes: ['read'] }, admin);
    const seen: string[] = [];
    const stop = identity.authenticator.onRevoked((id) => seen.push(id));
    // Revoked through the other Identity (its own pool): it reaches this one through the identity stream.
    await new Promise((r) => setTimeout(r, 300));
    await withJwt.tokens.revoke(record.id, admin);
    const deadline = Date.now() + 10_000;
    while (!seen.includes(record.id) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(seen).toEqual([record.id]);
    stop();
    const { record: later } = await identity.tokens.create({ name: 'watched-later', scopes: ['read'] }, admin);
    const { record: live } = await identity.tokens.create({ name: 'still-live', scopes: ['read'] }, admin);
    await withJwt.tokens.revoke(later.id, admin);
    await new Promise((r) => setTimeout(r, 500));
    expect(seen).toEqual([record.id]);
    expect(await identity.authenticator.live([record.id, later.id, live.id])).toEqual(new Set([live.id]));
    expect(await identity.authenticator.live([])).toEqual(new Set());
  });
});

describe('Authenticator: following revocations', () => {
  /** Waits until `done()` or 10 s, then a little longer, so a second (wrong) delivery would have arrived too. */
  const settle = async (done: () => boolean) => {
    const deadline = Date.now() + 10_000;
    while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 400));
  };

  it('follows the stream once however many listeners it has, and not at all once closed', async () => {
    const watcher = await openIdentity({ databaseUrl: db.url, log: silentLogger() });
    try {
      const [first, second, control] = [[], [], []] as string[][];
      watcher.authenticator.onRevoked((id) => first.push(id));
      watcher.authenticator.onRevoked((id) => second.push(id));
      identity.authenticator.onRevoked((id) => control.push(id));
      await new Promise((r) => setTimeout(r, 300));
      const { record } = await identity.tokens.create({ name: 'two-listeners', scopes: ['read'] }, admin);
      await withJwt.tokens.revoke(record.id, admin);
      await settle(() => first.length > 0 && second.length > 0);
      expect([first, second]).toEqual([[record.id], [record.id]]);

      await watcher.authenticator.close();
      const { record: after } = await identity.tokens.create({ name: 'after-close', scopes: ['read'] }, admin);
      await withJwt.tokens.revoke(after.id, admin);
      // The still-open authenticator sees it; the closed one does not.
      await settle(() => control.includes(after.id));
      expect(control).toContain(after.id);
      expect([first, second]).toEqual([[record.id], [record.id]]);
    } finally {
      await watcher.close();
    }
  });

  it("keeps its migrations in identity_migrations and names its LISTEN connection, so operators can tell them apart", async () => {
    const [{ n }] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM identity_migrations');
    expect(n).toBeGreaterThan(0);
    const names = (await db.query<{ application_name: string }>('SELECT application_name FROM pg_stat_activity WHERE datname = current_database()')).map((r) => r.application_name);
    expect(names).toContain('keelson-identity-listener');
  });
});

describe('TokenStore', () => {
  it('creates a token with its scopes deduplicated in registry order and an expiry in days, lists and finds it without the secret', async () => {
    const before = Date.now();
    const { token, record } = await identity.tokens.create({ name: 'scoped', scopes: ['write', 'read', 'write'], expiresInDays: 2 }, admin);
    expect(token).toMatch(/^kmt_[A-Za-z0-9_-]{43}$/);
    expect(record).toMatchObject({ name: 'scoped', scopes: ['read', 'write'], createdBy: admin, revokedAt: null, lastUsedAt: null, credential: 'token' });
    expect(record.expiresAt!.getTime()).toBeGreaterThanOrEqual(before + 2 * 86_400_000 - 1_000);
    expect(record.expiresAt!.getTime()).toBeLessThanOrEqual(Date.now() + 2 * 86_400_000 + 1_000);
    const { record: forever } = await identity.tokens.create({ name: 'forever', scopes: ['read'] }, null);
    expect([forever.expiresAt, forever.createdBy]).toEqual([null, null]);
    expect(await identity.tokens.byId(record.id)).toEqual(record);
    expect(await identity.tokens.byId('00000000-0000-4000-8000-000000000000')).toBeNull();
    const listed = await identity.tokens.list();
    expect(listed[0]!.id).toBe(forever.id);
    expect(JSON.stringify(listed)).not.toContain(token);
  });

  it('revokes once (a second revocation keeps the first), refuses an unknown id, and forgets a cached token at once', async () => {
    const { token, record } = await identity.tokens.create({ name: 'to-revoke', scopes: ['read'] }, admin);
    await identity.tokens.authenticate(token);
    const revoked = await identity.tokens.revoke(record.id, admin);
    expect(revoked.revokedAt).toBeInstanceOf(Date);
    await expect(identity.tokens.authenticate(token)).rejects.toMatchObject({ code: 'UNAUTHENTICATED', message: 'the API token is unknown, revoked or expired' });
    await expect(identity.tokens.revoke(record.id, null)).resolves.toEqual(revoked);
    await expect(identity.tokens.revoke('00000000-0000-4000-8000-000000000000', admin)).rejects.toMatchObject({ code: 'NOT_FOUND', message: 'no API token with id 00000000-0000-4000-8000-000000000000' });
    await expect(identity.tokens.authenticate('kmt_short')).rejects.toMatchObject({ code: 'UNAUTHENTICATED', message: 'the bearer token is not a valid API token' });
  });

  it('remembers a verified token for a few seconds (a revocation elsewhere is seen once forgotten) and records its use', async () => {
    // A process that does not follow the identity stream (no revocation listener): `identity` here
    // follows it since an earlier test, and would forget the token as soon as the revocation's
    // notification arrived — a race with the read below.
    const unfollowed = await openIdentity({ databaseUrl: db.url, log: silentLogger() });
    const { token, record } = await identity.tokens.create({ name: 'cached', scopes: ['read'] }, admin);
    try {
      await unfollowed.tokens.authenticate(token);
      await withJwt.tokens.revoke(record.id, admin);
      // Within the cache window this process still knows the token; forgetting it (as the identity stream does) ends that.
      await expect(unfollowed.tokens.authenticate(token)).resolves.toMatchObject({ tokenId: record.id });
      unfollowed.tokens.forget(record.id);
      await expect(unfollowed.tokens.authenticate(token)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
      const deadline = Date.now() + 5_000;
      let used: Date | null = null;
      while (!used && Date.now() < deadline) {
        used = (await identity.tokens.byId(record.id))!.lastUsedAt;
        if (!used) await new Promise((r) => setTimeout(r, 50));
      }
      expect(used).toBeInstanceOf(Date);
    } finally {
      await unfollowed.close();
    }
  });
});

describe('ensureAdminToken', () => {
  it('makes an admin token in <home>/token (0600) once, keeps it while it is live, and makes a new one once it is revoked', async () => {
    const dir = join(home, 'bootstrap');
    const first = await ensureAdminToken(identity.tokens, dir);
    expect(first).toMatchObject({ path: tokenFilePath(dir), created: true });
    expect(first.path).toBe(join(dir, 'token'));
    expect(readFileSync(first.path, 'utf8')).toBe(`${first.token}\n`);
    expect(statSync(first.path).mode & 0o777).toBe(0o600);
    await expect(identity.tokens.authenticate(first.token)).resolves.toMatchObject({ subject: 'token:admin (npm start)', scopes: expect.arrayContaining(['admin']) });
    await expect(ensureAdminToken(identity.tokens, dir)).resolves.toEqual({ token: first.token, path: first.path, created: false });
    const id = (await identity.tokens.authenticate(first.token)).tokenId!;
    await identity.tokens.revoke(id, null);
    const again = await ensureAdminToken(identity.tokens, dir);
    expect(again.created).toBe(true);
    expect(again.token).not.toBe(first.token);
    writeFileSync(first.path, '\n');
    expect((await ensureAdminToken(identity.tokens, dir)).created).toBe(true);
  });

  it('records the mesh itself as the admin token\'s creator, and leaves no descriptor of the file open', async () => {
    const dir = join(home, 'bootstrap-creator');
    const made = await ensureAdminToken(identity.tokens, dir);
    const record = await identity.tokens.byId((await identity.tokens.authenticate(made.token)).tokenId!);
    expect(record).toMatchObject({ name: 'admin (npm start)', scopes: ['admin'], createdBy: { subject: 'service:mesh', kind: 'service' } });
    const open = readdirSync('/proc/self/fd').flatMap((fd) => {
      try {
        return [readlinkSync(`/proc/self/fd/${fd}`)];
      } catch {
        return [];
      }
    });
    expect(open.filter((target) => target.startsWith(dir))).toEqual([]);
  });
});

describe('jwtSettingsFromEnv', () => {
  it('is undefined without a JWKS URL, needs the issuer and audience with one, and passes the lifetime only when set', () => {
    expect(jwtSettingsFromEnv({ KEELSON_JWT_SCOPE_CLAIM: 'scope' })).toBeUndefined();
    const message = 'KEELSON_JWT_JWKS_URL needs KEELSON_JWT_ISSUER and KEELSON_JWT_AUDIENCE: a JWT is accepted only for this issuer and audience';
    expect(() => jwtSettingsFromEnv({ KEELSON_JWT_JWKS_URL: 'http://idp/jwks', KEELSON_JWT_AUDIENCE: 'a', KEELSON_JWT_SCOPE_CLAIM: 'scope' })).toThrow(message);
    expect(() => jwtSettingsFromEnv({ KEELSON_JWT_JWKS_URL: 'http://idp/jwks', KEELSON_JWT_ISSUER: 'i', KEELSON_JWT_SCOPE_CLAIM: 'scope' })).toThrow(message);
    const env = { KEELSON_JWT_JWKS_URL: 'http://idp/jwks', KEELSON_JWT_ISSUER: 'i', KEELSON_JWT_AUDIENCE: 'a', KEELSON_JWT_SCOPE_CLAIM: 'scp' };
    expect(jwtSettingsFromEnv(env)).toStrictEqual({ jwksUrl: 'http://idp/jwks', issuer: 'i', audience: 'a', scopeClaim: 'scp' });
    expect(jwtSettingsFromEnv({ ...env, KEELSON_JWT_MAX_LIFETIME_S: 60 })).toStrictEqual({ jwksUrl: 'http://idp/jwks', issuer: 'i', audience: 'a', scopeClaim: 'scp', maxLifetimeSeconds: 60 });
  });
});
