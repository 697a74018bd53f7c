import { closeSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { TokenStore } from './tokenStore';

/** Where `npm start` keeps the admin token it made on first boot. */
export function tokenFilePath(home: string): string {
  return join(home, 'token');
}

/**
 * The admin token of a local mesh: the one in `<home>/token` while it is still live, else a new
 * admin token written there (mode 0600) — on first boot, or after the old one was revoked or the
 * file removed. `created` says which.
 */
export async function ensureAdminToken(tokens: TokenStore, home: string): Promise<{ token: string; path: string; created: boolean }> {
  const path = tokenFilePath(home);
  let existing: string | undefined;
  try {
    existing = readFileSync(path, 'utf8').trim();
  } catch {
    existing = undefined;
  }
  if (existing) {
    const live = await tokens.authenticate(existing).then(() => true, () => false);
    if (live) return { token: existing, path, created: false };
  }
  const { token } = await tokens.create({ name: 'admin (npm start)', scopes: ['admin'] }, { subject: 'service:mesh', kind: 'service' });
  await mkdir(home, { recursive: true, mode: 0o700 });
  const temp = `${path}.${process.pid}.tmp`;
  const fd = openSync(temp, 'w', 0o600);
  try {
    writeSync(fd, `${token}\n`);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
  return { token, path, created: true };
}
