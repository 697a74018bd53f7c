import { MeshError } from '@keelson/schema';
import { z } from 'zod';
import type { CredentialStore } from '../ports/credentialStore';

/** A service id: 1 to 64 of letters, digits, `.`, `_`, `-`, starting with a letter or digit. */
export const credentialServiceIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'a credential serviceId is 1 to 64 letters, digits, ., _ or -, starting with a letter or digit');

/** The account a rib's secret is stored under: `rib_<ribId>_<serviceId>`. */
export function credentialAccount(ribId: string, serviceId: string): string {
  return `rib_${ribId}_${serviceId}`;
}

/**
 * The read-only `getCredential` of one rib. The account is always built from the rib's own id (rib
 * ids have no `_`, so `rib_<id>_` cannot name another rib's prefix), and the seam can only read.
 * A malformed serviceId rejects with BAD_USER_INPUT.
 */
export function credentialSeam(store: CredentialStore, ribId: string): (serviceId: string) => Promise<string | undefined> {
  return async (serviceId) => {
    const parsed = credentialServiceIdSchema.safeParse(serviceId);
    if (!parsed.success) throw new MeshError('BAD_USER_INPUT', `getCredential: ${parsed.error.issues[0]?.message}`);
    return store.get(credentialAccount(ribId, parsed.data));
  };
}
