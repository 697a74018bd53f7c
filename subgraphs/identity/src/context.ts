import type { TokenStore } from '@keelson/identity';
import type { SubgraphContext } from '@keelson/kit';

export interface IdentityContext extends SubgraphContext {
  tokens: TokenStore;
}
