import { ASSERTION_HEADER, ASSERTION_PARAM, scopes, type Caller, type Scope } from '@keelson/schema';
import type { AssertionKey } from './assertionKey';

/**
 * How a mesh service proves itself to another (memory capture reading transcripts, the ribs
 * process reaching projects, the worker): an assertion of `service:<name>` with every scope, signed
 * with the mesh's key. Never leaves the mesh: the gateway does not accept assertions from clients.
 */
export interface ServiceIdentity {
  readonly caller: Caller;
  /** Headers for one HTTP call. */
  headers(): Promise<Record<string, string>>;
  /** The graphql-ws `connection_init` payload. */
  connectionParams(): Promise<Record<string, string>>;
}

export function serviceIdentity(key: AssertionKey, name: string, granted: readonly Scope[] = scopes): ServiceIdentity {
  return callerIdentity(key, { subject: `service:${name}`, kind: 'service', scopes: [...granted] });
}

/**
 * Acting for someone else inside the mesh: assertions of `caller` exactly as it was asserted to this
 * service (a run's starter, a turn's originator), so the service called holds it to its own scopes.
 */
export function callerIdentity(key: AssertionKey, caller: Caller): ServiceIdentity {
  const own: Caller = { subject: caller.subject, kind: caller.kind, scopes: [...caller.scopes], ...(caller.tokenId ? { tokenId: caller.tokenId } : {}) };
  return {
    caller: own,
    headers: async () => ({ [ASSERTION_HEADER]: await key.sign(own) }),
    connectionParams: async () => ({ [ASSERTION_PARAM]: await key.sign(own) }),
  };
}
