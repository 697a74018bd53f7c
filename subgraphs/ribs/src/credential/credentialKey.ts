import { createHash, randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The key file under the keelson home when KEELSON_CREDENTIALS_KEY is unset. */
export const CREDENTIALS_KEY_FILE = 'credentials.key';

/** A 32-byte AES key and its fingerprint (recorded with each secret, so a wrong key is named). */
export interface CredentialKey {
  key: Buffer;
  /** First 16 hex characters of sha256(key). */
  id: string;
  /** Where it came from: `KEELSON_CREDENTIALS_KEY` or the key file's path. */
  source: string;
}

/** Decodes a 32-byte key given as 64 hex characters or base64; throws naming what was wrong. */
export function decodeKey(text: string, source: string): CredentialKey {
  const trimmed = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, 'hex') : Buffer.from(trimmed, 'base64');
  if (key.length !== 32 || (!/^[0-9a-fA-F]{64}$/.test(trimmed) && key.toString('base64') !== trimmed)) {
    throw new Error(`${source}: expected a 32-byte key as 64 hex characters or 44 base64 characters`);
  }
  return { key, id: createHash('sha256').update(key).digest('hex').slice(0, 16), source };
}

/**
 * The credentials key: KEELSON_CREDENTIALS_KEY when set, else `<home>/credentials.key`, created on
 * first use with mode 0600 (in a 0700 home). An existing key file readable by group or others is
 * refused rather than used, as ssh refuses a loose private key.
 */
export async function loadCredentialKey(opts: { envKey?: string; home: string }): Promise<CredentialKey> {
  if (opts.envKey) return decodeKey(opts.envKey, 'KEELSON_CREDENTIALS_KEY');
  const path = join(opts.home, CREDENTIALS_KEY_FILE);
  await mkdir(opts.home, { recursive: true, mode: 0o700 });
  try {
    await writeFile(path, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
    // The umask cannot widen it, but a pre-set one can narrow what writeFile applied: be explicit.
    await chmod(path, 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new Error(`cannot create the credentials key ${path}: ${(err as Error).message}`);
  }
  const mode = (await stat(path)).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    throw new Error(`the credentials key ${path} is readable by others (mode ${mode.toString(8)}); run chmod 600 ${path}`);
  }
  return decodeKey(await readFile(path, 'utf8'), path);
}
