import { callerKey, scopes, type Caller } from '@keelson/schema';

/** An accepted credential: the caller and, for a JWT, when it expires (epoch ms). */
export interface AcceptedCredential {
  caller: Caller;
  expiresAt?: number;
}

/**
 * What the gateway asks about credentials (implemented by `@keelson/identity`'s Authenticator):
 * who an `authorization` header stands for, which tokens are still live, and revocations as they
 * happen anywhere in the mesh.
 */
export interface CredentialCheck {
  /** @throws a MeshError UNAUTHENTICATED when the header is missing or not accepted. */
  authenticate(authorization: string | undefined): Promise<AcceptedCredential>;
  /** Of these token ids, the ones not revoked and not expired. */
  live(tokenIds: readonly string[]): Promise<Set<string>>;
  /** Calls `listener` for every token revoked from now on; returns the unsubscribe. */
  onRevoked(listener: (tokenId: string) => void): () => void;
}

/** The caller of every request when authentication is off (loopback only, logged loudly). */
export const anonymousCaller: Caller = { subject: 'anonymous (KEELSON_AUTH=off)', kind: 'service', scopes: [...scopes] };

/** The key sockets are counted and revoked under (the caller's stable key). */
export const credentialKey: (caller: Caller) => string = callerKey;
