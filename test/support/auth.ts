import { ASSERTION_HEADER, ASSERTION_PARAM, scopes, type Caller } from '@keelson/schema';
import { testSecurity, type AssertionKey } from '@keelson/service';
import type { Credentials } from './client';

/** The caller tests speak to subgraphs as: a mesh service with every scope. */
export const testService: Caller = { subject: 'service:test', kind: 'service', scopes: [...scopes] };

/** Credentials carrying an assertion of `caller` signed with `key` (what the gateway sends subgraphs). */
export function assertionCredentials(key: AssertionKey, caller: Caller = testService): Credentials {
  return {
    headers: async () => ({ [ASSERTION_HEADER]: await key.sign(caller) }),
    connectionParams: async () => ({ [ASSERTION_PARAM]: await key.sign(caller) }),
  };
}

/**
 * The security every in-process service of one test file runs under (a fresh assertion key per
 * file), and credentials signed with it.
 */
export const security = testSecurity();
export const serviceCredentials = assertionCredentials(security.assertions);
