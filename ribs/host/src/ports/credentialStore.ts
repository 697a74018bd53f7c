/**
 * Where rib secrets live, keyed by account `rib_<ribId>_<serviceId>`. The subgraph implements it on
 * Postgres and encrypts values at rest. The host only ever reads, and only under the calling rib's
 * own prefix.
 */
export interface CredentialStore {
  /** The secret stored under `account`, or undefined. */
  get(account: string): Promise<string | undefined>;
}
