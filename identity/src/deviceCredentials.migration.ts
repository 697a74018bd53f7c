import { sqlMigration } from '@keelson/platform';

/**
 * Enrolled devices share the token table (scopes, expiry, revocation, last use and the identity
 * stream's TOKEN_REVOKED all apply alike): `credential` says which kind a row is; a device row's
 * `secret_sha256` is the SHA-256 of its client certificate's DER.
 */
export const DeviceCredentials1764460800710 = sqlMigration('DeviceCredentials1764460800710', {
  up: [
    `ALTER TABLE api_tokens ADD COLUMN IF NOT EXISTS credential text NOT NULL DEFAULT 'token'`,
    `ALTER TABLE api_tokens DROP CONSTRAINT IF EXISTS api_tokens_credential_check`,
    `ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_credential_check CHECK (credential IN ('token', 'device'))`,
  ],
  down: [
    `DELETE FROM api_tokens WHERE credential = 'device'`,
    'ALTER TABLE api_tokens DROP COLUMN IF EXISTS credential',
  ],
});
