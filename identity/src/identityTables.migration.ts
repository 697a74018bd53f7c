import { sqlMigration } from '@keelson/platform';

/**
 * API tokens: only a SHA-256 of the secret is stored (a token is 256 random bits, so a fast hash
 * is enough and lookups stay one index probe); scopes, expiry, revocation and last use.
 */
export const IdentityTables1764460800700 = sqlMigration('IdentityTables1764460800700', {
  up: [
    `CREATE TABLE IF NOT EXISTS api_tokens (
      id uuid PRIMARY KEY,
      name text NOT NULL,
      scopes text[] NOT NULL,
      secret_sha256 bytea NOT NULL UNIQUE,
      created_at timestamptz NOT NULL DEFAULT now(),
      created_by jsonb,
      expires_at timestamptz,
      last_used_at timestamptz,
      revoked_at timestamptz,
      revoked_by jsonb
    )`,
  ],
  down: [
    'DROP TABLE IF EXISTS api_tokens',
  ],
});
