import type { EventLog } from '@keelson/platform';
import { randomBytes, randomUUID } from 'node:crypto';
import { effectiveScopes, MeshError, scopes as allScopes, streams, type Actor, type Caller, type Scope } from '@keelson/schema';
import { certificateDigest } from './deviceCa';
import { LIVE_TOKEN_SQL, TOKEN_PATTERN, TOKEN_PREFIX, tokenCaller, tokenDigest as digest, type LiveTokenRow } from '@keelson/service';
import type { DataSource } from 'typeorm';

export { TOKEN_PREFIX };
/** How long a verified token is trusted without asking Postgres again; revocations evict at once. */
const CACHE_MS = 5_000;
/** `last_used_at` is written at most this often per token. */
const TOUCH_EVERY_MS = 60_000;

/** A token as listed: never its secret. */
export interface ApiTokenRecord {
  id: string;
  name: string;
  scopes: Scope[];
  createdAt: Date;
  createdBy: Actor | null;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
  /** `token` (a bearer secret) or `device` (an enrolled device's client certificate). */
  credential: 'token' | 'device';
}

export interface NewToken {
  name: string;
  scopes: Scope[];
  /** Unset: never expires. */
  expiresInDays?: number;
}

/** Events of the identity stream, keyed by token id; the payload never holds a secret. */
export const identityEventTypes = ['TOKEN_CREATED', 'TOKEN_REVOKED'] as const;
export type IdentityEventType = (typeof identityEventTypes)[number];
export interface IdentityEventPayload {
  tokenId: string;
  name: string;
}


const COLUMNS = `id, name, scopes, created_at AS "createdAt", created_by AS "createdBy", expires_at AS "expiresAt",
  last_used_at AS "lastUsedAt", revoked_at AS "revokedAt", credential`;

/** The live device row a client certificate belongs to (`$1` is the SHA-256 of its DER). */
const LIVE_DEVICE_SQL = `SELECT id, name, scopes, expires_at AS "expiresAt" FROM api_tokens
       WHERE secret_sha256 = $1 AND credential = 'device' AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`;

/**
 * The API tokens of the mesh. A token is `kmt_` + 256 random bits (base64url), shown once at
 * creation; only its SHA-256 is stored. Verification is one indexed read, remembered for a few
 * seconds; a revocation in this process evicts at once, one in another process reaches it through
 * the identity stream (see `Authenticator`).
 */
export class TokenStore {
  private readonly cache = new Map<string, { caller: Caller; until: number; expiresAt: number | null }>();
  private readonly touched = new Map<string, number>();

  constructor(
    private readonly dataSource: DataSource,
    private readonly events: EventLog,
  ) {}

  /** Creates a token; the secret is in the answer and nowhere else. */
  async create(input: NewToken, actor: Actor | null): Promise<{ token: string; record: ApiTokenRecord }> {
    const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
    return { token, record: await this.insert(input, digest(token), 'token', actor) };
  }

  /**
   * Records an enrolled device: its client certificate stands for it (`certificateDigest` of the DER
   * is what is kept), with these scopes, until `expiresAt` (the certificate's end) or revocation.
   */
  async enrollDevice(input: { name: string; scopes: Scope[]; certificateSha256: Buffer; expiresAt: Date }, actor: Actor | null): Promise<ApiTokenRecord> {
    return this.insert({ name: input.name, scopes: input.scopes }, input.certificateSha256, 'device', actor, input.expiresAt);
  }

  private async insert(input: NewToken, secretSha256: Buffer, credential: ApiTokenRecord['credential'], actor: Actor | null, until?: Date): Promise<ApiTokenRecord> {
    const id = randomUUID();
    const expiresAt = until ?? (input.expiresInDays === undefined ? null : new Date(Date.now() + input.expiresInDays * 86_400_000));
    const granted = [...new Set(input.scopes)].sort((a, b) => allScopes.indexOf(a) - allScopes.indexOf(b));
    return this.dataSource.transaction(async (m) => {
      const [row] = (await m.query(
        `INSERT INTO api_tokens (id, name, scopes, secret_sha256, created_by, expires_at, credential)
         VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7) RETURNING ${COLUMNS}`,
        [id, input.name, granted, secretSha256, actor ? JSON.stringify(actor) : null, expiresAt, credential],
      )) as ApiTokenRecord[];
      await this.events.append<IdentityEventPayload>(m, { stream: streams.identity, key: id, type: 'TOKEN_CREATED', payload: { tokenId: id, name: input.name }, ...(actor ? { actor } : {}) });
      return row!;
    });
  }

  /** Every token, newest first (revoked ones included, marked). */
  async list(): Promise<ApiTokenRecord[]> {
    return (await this.dataSource.query(`SELECT ${COLUMNS} FROM api_tokens ORDER BY created_at DESC, id`)) as ApiTokenRecord[];
  }

  async byId(id: string): Promise<ApiTokenRecord | null> {
    const [row] = (await this.dataSource.query(`SELECT ${COLUMNS} FROM api_tokens WHERE id = $1`, [id])) as ApiTokenRecord[];
    return row ?? null;
  }

  /**
   * Revokes a token (idempotent: an already revoked token keeps its first revocation).
   * @throws MeshError NOT_FOUND for an unknown id.
   */
  async revoke(id: string, actor: Actor | null): Promise<ApiTokenRecord> {
    const record = await this.dataSource.transaction(async (m) => {
      const [row] = (await m.query(
        `UPDATE api_tokens SET revoked_at = now(), revoked_by = $2::jsonb WHERE id = $1 AND revoked_at IS NULL RETURNING ${COLUMNS}`,
        [id, actor ? JSON.stringify(actor) : null],
      )) as [ApiTokenRecord[], number] | ApiTokenRecord[];
      const updated = Array.isArray(row) ? (row as ApiTokenRecord[])[0] : row;
      if (!updated) {
        const [existing] = (await m.query(`SELECT ${COLUMNS} FROM api_tokens WHERE id = $1`, [id])) as ApiTokenRecord[];
        if (!existing) throw new MeshError('NOT_FOUND', `no API token with id ${id}`);
        return existing;
      }
      await this.events.append<IdentityEventPayload>(m, { stream: streams.identity, key: id, type: 'TOKEN_REVOKED', payload: { tokenId: id, name: updated.name }, ...(actor ? { actor } : {}) });
      return updated;
    });
    this.forget(id);
    return record;
  }

  /** Drops what this process remembers of a token (after a revocation anywhere). */
  forget(tokenId: string): void {
    for (const [key, entry] of this.cache) if (entry.caller.tokenId === tokenId) this.cache.delete(key);
  }

  /**
   * The caller a token stands for.
   * @throws MeshError UNAUTHENTICATED for a malformed, unknown, revoked or expired token (one message
   * for all: which of them is not said).
   */
  async authenticate(token: string): Promise<Caller> {
    if (!TOKEN_PATTERN.test(token)) throw new MeshError('UNAUTHENTICATED', 'the bearer token is not a valid API token');
    const now = Date.now();
    const cached = this.cache.get(token);
    if (cached && cached.until > now && (cached.expiresAt === null || cached.expiresAt > now)) {
      this.touch(cached.caller.tokenId!, now);
      return cached.caller;
    }
    const [row] = (await this.dataSource.query(LIVE_TOKEN_SQL, [digest(token)])) as LiveTokenRow[];
    if (!row) {
      this.cache.delete(token);
      throw new MeshError('UNAUTHENTICATED', 'the API token is unknown, revoked or expired');
    }
    const caller = tokenCaller(row);
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(token, { caller, until: now + CACHE_MS, expiresAt: row.expiresAt ? row.expiresAt.getTime() : null });
    this.touch(row.id, now);
    return caller;
  }

  /**
   * The caller an enrolled device's client certificate (its DER) stands for: `device:<name>`.
   * @throws MeshError UNAUTHENTICATED for a certificate of no device, or a revoked or expired one.
   */
  async authenticateDevice(certificateDer: Uint8Array): Promise<Caller> {
    const sha = certificateDigest(certificateDer);
    const key = `device:${sha.toString('hex')}`;
    const now = Date.now();
    const cached = this.cache.get(key);
    if (cached && cached.until > now && (cached.expiresAt === null || cached.expiresAt > now)) {
      this.touch(cached.caller.tokenId!, now);
      return cached.caller;
    }
    const [row] = (await this.dataSource.query(LIVE_DEVICE_SQL, [sha])) as LiveTokenRow[];
    if (!row) {
      this.cache.delete(key);
      throw new MeshError('UNAUTHENTICATED', 'the client certificate is not of an enrolled device, or the device was revoked');
    }
    const caller: Caller = { subject: `device:${row.name}`, kind: 'token', scopes: effectiveScopes(row.scopes), tokenId: row.id };
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(key, { caller, until: now + CACHE_MS, expiresAt: row.expiresAt ? row.expiresAt.getTime() : null });
    this.touch(row.id, now);
    return caller;
  }

  /** Of `ids`, those that are still live (not revoked, not expired): one read for every open socket. */
  async live(ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = (await this.dataSource.query(
      'SELECT id FROM api_tokens WHERE id = ANY($1::uuid[]) AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())',
      [ids],
    )) as { id: string }[];
    return new Set(rows.map((r) => r.id));
  }

  /** Records use at most once a minute per token, without making the request wait. */
  private touch(id: string, now: number): void {
    if ((this.touched.get(id) ?? 0) + TOUCH_EVERY_MS > now) return;
    this.touched.set(id, now);
    void this.dataSource.query('UPDATE api_tokens SET last_used_at = now() WHERE id = $1', [id]).catch(() => this.touched.delete(id));
  }
}
