import { buildFederatedSchema, type FederatedSchema } from '@keelson/kit';
import { SwarmEventResolver } from './event/swarmEvent.resolver';
import { swarmsReferenceResolvers } from './federation/references';
import { HarnessSession, Op, Project, WorkspaceLease } from './federation/stubs.type';
import { ServerResolver } from './server/server.resolver';
import { SwarmAgentResolver, SwarmResolver } from './swarm/swarm.resolver';

/** The swarms subgraph schema; needs no database, so composition can build it offline. */
export function buildSwarmsSchema(): Promise<FederatedSchema> {
  return buildFederatedSchema({
    resolvers: [SwarmResolver, SwarmAgentResolver, ServerResolver, SwarmEventResolver],
    orphanedTypes: [Op, Project, HarnessSession, WorkspaceLease],
    referenceResolvers: swarmsReferenceResolvers,
  });
}
