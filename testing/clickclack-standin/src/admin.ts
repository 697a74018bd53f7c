import { hashSecret, secret } from './ids';
import type { StandinStore, UserRow } from './store';

/** How long a magic link signs in (SWARM.md: 15 minutes). */
export const MAGIC_TTL_MS = 15 * 60 * 1000;

/** A failed admin command: its message goes to stderr and the process exits 1. */
export class AdminError extends Error {}

const EMAIL = /^[^\s@]+@[^\s@]+$/;

function normalEmail(email: string | undefined): string {
  const e = (email ?? '').trim().toLowerCase();
  if (!EMAIL.test(e)) throw new AdminError(`-email: a valid address is required, got ${JSON.stringify(email ?? '')}`);
  return e;
}

function humanByEmail(store: StandinStore, email: string): UserRow | undefined {
  return store.all('users').find((u) => u.kind === 'human' && u.email === email && !u.deleted_at);
}

/**
 * `clickclack admin bootstrap -data <dir> -email <e> -name <n>`: creates the owner (a human user)
 * straight in the data directory, as the real command writes its database, and returns its id.
 * An owner already there with that email is returned as it is.
 */
export function adminBootstrap(store: StandinStore, opts: { email?: string; name?: string }): UserRow {
  const email = normalEmail(opts.email);
  const existing = humanByEmail(store, email);
  if (existing) return existing;
  const name = (opts.name ?? '').trim() || email;
  return store.put('users', {
    id: store.newId('usr'),
    kind: 'human',
    display_name: name,
    email,
    handle: null,
    owner_user_id: null,
    created_at: new Date().toISOString(),
    deleted_at: null,
    former_handle: null,
  });
}

/** A magic link for a human user: the row stored (hashed), the `mgt_…` token returned once. */
export function createMagicLink(store: StandinStore, user: UserRow): { token: string; id: string; expiresAt: string; createdAt: string } {
  const token = secret('mgt');
  const now = Date.now();
  const link = store.put('magicLinks', {
    id: store.newId('mgl'),
    email: user.email ?? '',
    user_id: user.id,
    token_hash: hashSecret(token),
    created_at: new Date(now).toISOString(),
    expires_at: new Date(now + MAGIC_TTL_MS).toISOString(),
    consumed_at: null,
  });
  return { token, id: link.id, expiresAt: link.expires_at, createdAt: link.created_at };
}

/** `clickclack admin magic-link create -data <dir> -email <e>`: a sign-in token for that user. */
export function adminMagicLink(store: StandinStore, opts: { email?: string }): string {
  const email = normalEmail(opts.email);
  const user = humanByEmail(store, email);
  if (!user) throw new AdminError(`no user with email ${email}`);
  return createMagicLink(store, user).token;
}
