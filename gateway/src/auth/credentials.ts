import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { callerKey, isLoopback, MeshError, scopes, type Caller } from '@keelson/schema';

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
  /**
   * Who an enrolled device's client certificate (its DER) stands for (device mode).
   * @throws a MeshError UNAUTHENTICATED for a certificate of no device, or a revoked one.
   */
  authenticateDevice?(certificateDer: Uint8Array): Promise<AcceptedCredential>;
  /** Of these token ids, the ones not revoked and not expired. */
  live(tokenIds: readonly string[]): Promise<Set<string>>;
  /** Calls `listener` for every token revoked from now on; returns the unsubscribe. */
  onRevoked(listener: (tokenId: string) => void): () => void;
}

/** The caller of every request when authentication is off (loopback only, logged loudly). */
export const anonymousCaller: Caller = { subject: 'anonymous (KEELSON_AUTH=off)', kind: 'service', scopes: [...scopes] };

/** The key sockets are counted and revoked under (the caller's stable key). */
export const credentialKey: (caller: Caller) => string = callerKey;

/** Whether a peer address is this machine (`::ffff:127.0.0.1` included). */
export function isLoopbackPeer(address: string | undefined): boolean {
  return !!address && isLoopback(address.startsWith('::ffff:') ? address.slice(7) : address);
}

/**
 * Device mode's rule for one TLS connection, applied before any request on it is read: a loopback
 * peer may come without a certificate (local scripts and MCP clients keep their tokens); any other
 * peer must present one that chains to the device CA and is in date.
 */
export function acceptDeviceConnection(socket: TLSSocket): boolean {
  return isLoopbackPeer(socket.remoteAddress) || socket.authorized;
}

/**
 * Who a request stands for in device mode: off loopback, the enrolled device whose certificate the
 * connection presented (any authorization header is not what decides); on loopback, its
 * `authorization` as everywhere else.
 */
export async function authenticateRequest(
  request: IncomingMessage | undefined,
  authorization: string | undefined,
  check: CredentialCheck,
  deviceMode: boolean,
): Promise<AcceptedCredential> {
  if (!deviceMode || !request || isLoopbackPeer(request.socket.remoteAddress)) return check.authenticate(authorization);
  const certificate = (request.socket as TLSSocket).getPeerCertificate?.();
  if (!certificate?.raw || !(request.socket as TLSSocket).authorized) {
    throw new MeshError('UNAUTHENTICATED', 'off loopback this mesh accepts only enrolled devices: present the client certificate from npm run token -- enroll-device');
  }
  if (!check.authenticateDevice) throw new MeshError('UNAUTHENTICATED', 'this gateway cannot check device certificates');
  return check.authenticateDevice(certificate.raw);
}
