import { createHash } from 'node:crypto';
import { effectiveScopes, MeshError, type Caller, type Scope } from '@keelson/schema';
import { Pool } from 'pg';
import type { PgTimeouts } from './meshSecurity';

/** Every API token starts with this, so a leaked one is recognisable (secret scanners, logs). */
export const TOKEN_PREFIX = 'kmt_';
/** A well-formed API token: the prefix and 32 random bytes, base64url. */
export const TOKEN_PATTERN = /^kmt_[A-Za-z0-9_-]{43}$/;

/** What the token table keeps of a secret: its SHA-256, never the secret. */
export function tokenDigest(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

/** The live token row a secret belongs to (`$1` is its digest): not revoked, not expired. */
export const LIVE_TOKEN_SQL = `SELECT id, name, scopes, expires_at AS "expiresAt" FROM api_tokens
       WHERE secret_sha256 = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`;

export interface LiveTokenRow {
  id: string;
  name: string;
  scopes: Scope[];
  expiresAt: Date | null;
}

/** The caller an API token row stands for. */
export function tokenCaller(row: LiveTokenRow): Caller {
  return { subject: `token:${row.name}`, kind: 'token', scopes: effectiveScopes(row.scopes), tokenId: row.id };
}

/** Checks a bearer API token against the token table (one read, no cache): for `/metrics` of any service. */
export interface ApiTokenCheck {
  /** @throws MeshError UNAUTHENTICATED for a missing header, a malformed, unknown, revoked or expired token */
  authenticate(authorization: string | undefined): Promise<Caller>;
  close(): Promise<void>;
}

/**
 * An {@link ApiTokenCheck} over its own small pool (one connection, opened on first use, which does
 * not keep the process alive): services other than the gateway verify a scraper's token with it.
 */
export function apiTokenCheck(databaseUrl: string, pg: PgTimeouts): ApiTokenCheck {
  let pool: Pool | undefined;
  let closed = false;
  return {
    async authenticate(authorization) {
      if (closed) throw new MeshError('SERVICE_UNAVAILABLE', 'the service is stopping');
      const m = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization) : null;
      if (!m) throw new MeshError('UNAUTHENTICATED', 'authentication required: send authorization: Bearer <API token> (README "Traces and metrics")');
      if (!TOKEN_PATTERN.test(m[1]!)) throw new MeshError('UNAUTHENTICATED', 'the bearer token is not a valid API token');
      pool ??= new Pool({
        connectionString: databaseUrl,
        max: 1,
        allowExitOnIdle: true,
        connectionTimeoutMillis: pg.connectTimeoutMs,
        statement_timeout: pg.statementTimeoutMs,
        application_name: 'keelson-metrics-auth',
        // Scrapes come every few seconds at most: no connection is kept between them.
        idleTimeoutMillis: 1_000,
      });
      // An idle connection the server ends (a restart, a dropped database) is only discarded; the
      // next scrape opens another.
      pool.on('error', () => undefined);
      const { rows } = await pool.query<LiveTokenRow>(LIVE_TOKEN_SQL, [tokenDigest(m[1]!)]);
      if (!rows[0]) throw new MeshError('UNAUTHENTICATED', 'the API token is unknown, revoked or expired');
      return tokenCaller(rows[0]);
    },
    async close() {
      closed = true;
      await pool?.end();
      pool = undefined;
    },
  };
}
