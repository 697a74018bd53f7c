import { buildFederatedSchema, type FederatedSchema } from '@keelson/kit';
import { AuditResolver } from './audit/audit.resolver';
import { ApiTokenResolver } from './token/apiToken.resolver';

/** The identity subgraph schema; needs no database, so composition can build it offline. */
export function buildIdentitySchema(): Promise<FederatedSchema> {
  return buildFederatedSchema({
    resolvers: [ApiTokenResolver, AuditResolver],
    referenceResolvers: {
      ApiToken: {
        __resolveReference: (ref: { id: string }, ctx: unknown) => (ctx as { tokens: { byId(id: string): Promise<unknown> } }).tokens.byId(ref.id),
      },
    },
  });
}
