import { ASSERTION_HEADER, ASSERTION_PARAM, scopes, type Caller } from '@keelson/schema';
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

export function serviceIdentity(key: AssertionKey, name: string): ServiceIdentity {
  const caller: Caller = { subject: `service:${name}`, kind: 'service', scopes: [...scopes] };
  return {
    caller,
    headers: async () => ({ [ASSERTION_HEADER]: await key.sign(caller) }),
    connectionParams: async () => ({ [ASSERTION_PARAM]: await key.sign(caller) }),
  };
}
