import type { TokenStore } from '@keelson/identity';
import type { EventLog } from '@keelson/platform';
import type { SubgraphContext } from '@keelson/kit';

export interface IdentityContext extends SubgraphContext {
  tokens: TokenStore;
  /** The event log (the audit stream's tail). */
  events: EventLog;
}
