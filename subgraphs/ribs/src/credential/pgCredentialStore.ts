import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { CredentialStore } from '@keelson/host';
import { MeshError } from '@keelson/schema';
import type { DataSource } from 'typeorm';
import { StoredCredential } from './credential.entity';
import type { CredentialKey } from './credentialKey';

const ACCOUNT = /^rib_[a-z][a-z0-9-]{0,63}_[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** A sealed secret: AES-256-GCM with a fresh 12-byte IV, its account bound as associated data. */
export function seal(key: CredentialKey, account: string, secret: string): { ciphertext: Buffer; iv: Buffer; authTag: Buffer } {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key.key, iv);
  cipher.setAAD(Buffer.from(account, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return { ciphertext, iv, authTag: cipher.getAuthTag() };
}

/** Opens a sealed secret; throws when the key, the account or the bytes do not match. */
export function open(key: CredentialKey, account: string, sealed: { ciphertext: Buffer; iv: Buffer; authTag: Buffer }): string {
  const decipher = createDecipheriv('aes-256-gcm', key.key, sealed.iv);
  decipher.setAAD(Buffer.from(account, 'utf8'));
  decipher.setAuthTag(sealed.authTag);
  return Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]).toString('utf8');
}

/** One stored account, without its secret. */
export interface CredentialInfo {
  account: string;
  keyId: string;
  updatedAt: Date;
}

/**
 * Rib secrets in Postgres, encrypted at rest (AES-256-GCM; the account is the associated data, so a
 * ciphertext copied to another account does not open). The key is loaded on first use. Ribs reach
 * only `get`, through the host's read-only `getCredential` seam under their own prefix; `set`,
 * `delete` and `list` are for operators (`npm run credential`), never the public API.
 */
export class PgCredentialStore implements CredentialStore {
  private key: Promise<CredentialKey> | undefined;

  constructor(
    private readonly dataSource: DataSource,
    private readonly loadKey: () => Promise<CredentialKey>,
  ) {}

  private keyNow(): Promise<CredentialKey> {
    this.key ??= this.loadKey().catch((err: unknown) => {
      this.key = undefined;
      throw err;
    });
    return this.key;
  }

  async get(account: string): Promise<string | undefined> {
    const row = await this.dataSource.getRepository(StoredCredential).findOneBy({ account });
    if (!row) return undefined;
    const key = await this.keyNow();
    try {
      return open(key, account, row);
    } catch {
      const hint = row.keyId === key.id ? 'the stored bytes do not authenticate (tampered or moved from another account)' : `it was sealed with key ${row.keyId}, the configured key (${key.source}) is ${key.id}`;
      throw new MeshError('INTERNAL', `credential ${account} cannot be decrypted: ${hint}`);
    }
  }

  /** Stores (or replaces) a secret. */
  async set(account: string, secret: string): Promise<void> {
    if (!ACCOUNT.test(account)) throw new MeshError('BAD_USER_INPUT', `account: expected rib_<ribId>_<serviceId>, got ${JSON.stringify(account)}`);
    if (secret.length === 0) throw new MeshError('BAD_USER_INPUT', 'secret: must not be empty');
    const key = await this.keyNow();
    const sealed = seal(key, account, secret);
    await this.dataSource.query(
      `INSERT INTO rib_credentials (account, ciphertext, iv, auth_tag, key_id, updated_at) VALUES ($1, $2, $3, $4, $5, now())
       ON CONFLICT (account) DO UPDATE SET ciphertext = EXCLUDED.ciphertext, iv = EXCLUDED.iv, auth_tag = EXCLUDED.auth_tag,
         key_id = EXCLUDED.key_id, updated_at = EXCLUDED.updated_at`,
      [account, sealed.ciphertext, sealed.iv, sealed.authTag, key.id],
    );
  }

  /** False when there was nothing to delete. */
  async delete(account: string): Promise<boolean> {
    const result = await this.dataSource.getRepository(StoredCredential).delete({ account });
    return (result.affected ?? 0) > 0;
  }

  /** Stored accounts (never their secrets), optionally of one rib. */
  async list(ribId?: string): Promise<CredentialInfo[]> {
    const rows = await this.dataSource.getRepository(StoredCredential).find({ order: { account: 'ASC' } });
    return rows
      .filter((r) => ribId === undefined || r.account.startsWith(`rib_${ribId}_`))
      .map((r) => ({ account: r.account, keyId: r.keyId, updatedAt: r.updatedAt }));
  }
}
