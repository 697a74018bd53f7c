import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { callerSchema, MeshError, type Caller } from '@keelson/schema';
import { jwtVerify, SignJWT } from 'jose';

/** Who signs and who accepts assertions; a token signed for anything else never verifies here. */
const ISSUER = 'keelson-mesh';
const AUDIENCE = 'keelson-subgraph';
/** How long one assertion stays valid. Short: it stands for a request (or one socket's handshake). */
const LIFETIME_S = 120;
/** A cached signed assertion is reused while it has at least this long left. */
const REUSE_MARGIN_S = 60;
/** Verified assertions remembered at once (a bound, not a tuning knob: repeats are cheap either way). */
const VERIFIED_CACHE_MAX = 10_000;

interface Signed {
  token: string;
  expiresAt: number;
}

/**
 * The mesh's shared secret for caller assertions: the gateway signs who the caller is (subject,
 * kind, scopes, token id) into a short-lived HS256 JWT it forwards to subgraphs; subgraphs accept a
 * request only with a valid one. Mesh services calling each other sign their own service identity.
 * Signed tokens are reused while fresh and verified ones remembered until they expire, so neither
 * costs a signature per request.
 */
export class AssertionKey {
  private readonly secret: Uint8Array;
  private readonly signed = new Map<string, Signed>();
  private readonly verified = new Map<string, { caller: Caller; expiresAt: number }>();
  /** When expired entries are next dropped from both caches (seconds since the epoch). */
  private nextSweepAt = 0;

  constructor(secret: string | Uint8Array) {
    this.secret = typeof secret === 'string' ? new TextEncoder().encode(secret) : secret;
    if (this.secret.byteLength < 32) throw new Error('the assertion secret must be at least 32 bytes');
  }

  /** A fresh random key (tests; a deployment shares one secret between processes). */
  static random(): AssertionKey {
    return new AssertionKey(randomBytes(32));
  }

  /** An assertion of `caller`, valid for about two minutes. */
  async sign(caller: Caller): Promise<string> {
    const cacheKey = `${caller.kind}\u0000${caller.subject}\u0000${caller.tokenId ?? ''}\u0000${caller.scopes.join(',')}`;
    const now = Math.floor(Date.now() / 1000);
    const cached = this.signed.get(cacheKey);
    if (cached && cached.expiresAt - now >= REUSE_MARGIN_S) return cached.token;
    const expiresAt = now + LIFETIME_S;
    const token = await new SignJWT({ kind: caller.kind, scopes: caller.scopes, ...(caller.tokenId ? { tid: caller.tokenId } : {}) })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(caller.subject)
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime(expiresAt)
      .sign(this.secret);
    this.sweep(now);
    if (this.signed.size > VERIFIED_CACHE_MAX) this.signed.clear();
    this.signed.set(cacheKey, { token, expiresAt });
    return token;
  }

  /** How many signed and verified assertions are remembered now (tests, diagnostics). */
  cacheSizes(): { signed: number; verified: number } {
    return { signed: this.signed.size, verified: this.verified.size };
  }

  /**
   * Drops expired entries from both caches, at most once per assertion lifetime: a process that runs
   * for days keeps only the assertions still valid (each signer makes a new one every minute or so),
   * not every one it ever saw up to the caches' bound.
   */
  private sweep(now: number): void {
    if (now < this.nextSweepAt) return;
    this.nextSweepAt = now + LIFETIME_S;
    for (const [k, v] of this.verified) if (v.expiresAt <= now) this.verified.delete(k);
    for (const [k, v] of this.signed) if (v.expiresAt <= now) this.signed.delete(k);
  }

  /**
   * The caller an assertion stands for.
   * @throws MeshError UNAUTHENTICATED when it is missing, malformed, expired or not signed with this key.
   */
  async verify(token: string | undefined | null): Promise<Caller> {
    if (!token) throw new MeshError('UNAUTHENTICATED', 'this service accepts requests only through the gateway (no caller assertion)');
    const now = Date.now() / 1000;
    const known = this.verified.get(token);
    if (known && known.expiresAt > now) return known.caller;
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, this.secret, { issuer: ISSUER, audience: AUDIENCE, algorithms: ['HS256'] }));
    } catch (err) {
      throw new MeshError('UNAUTHENTICATED', `the caller assertion is not valid (${(err as Error).message})`);
    }
    const parsed = callerSchema.safeParse({
      subject: payload.sub,
      kind: payload.kind,
      scopes: payload.scopes,
      ...(typeof payload.tid === 'string' ? { tokenId: payload.tid } : {}),
    });
    if (!parsed.success) throw new MeshError('UNAUTHENTICATED', 'the caller assertion does not name a caller');
    this.sweep(now);
    if (this.verified.size >= VERIFIED_CACHE_MAX) {
      for (const [k, v] of this.verified) if (v.expiresAt <= now) this.verified.delete(k);
      if (this.verified.size >= VERIFIED_CACHE_MAX) this.verified.clear();
    }
    this.verified.set(token, { caller: parsed.data, expiresAt: Number(payload.exp) });
    return parsed.data;
  }
}

/** The file a process keeps the assertion secret in when KEELSON_ASSERTION_SECRET is unset. */
export function assertionKeyPath(home: string): string {
  return join(home, 'assertion.key');
}

/**
 * The mesh's assertion key: `KEELSON_ASSERTION_SECRET` when set, else `<home>/assertion.key`,
 * created (32 random bytes, mode 0600) by the first process that needs it. Synchronous: it is read
 * once, while a service loads its configuration.
 */
export function loadAssertionKey(secret: string | undefined, home: string): AssertionKey {
  if (secret) return new AssertionKey(secret);
  const path = assertionKeyPath(home);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  try {
    const fd = openSync(path, 'wx', 0o600);
    try {
      writeSync(fd, randomBytes(32).toString('base64url'));
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const text = readFileSync(path, 'utf8').trim();
  if (text.length < 32) throw new Error(`${path} holds no assertion secret (at least 32 characters); delete it to have a new one made`);
  return new AssertionKey(text);
}
