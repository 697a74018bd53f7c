import { buildFederatedSchema, type FederatedSchema } from '@keelson/kit';
import { HarnessEventResolver } from './event/harnessEvent.resolver';
import { harnessEventTypesList } from './event/harnessEvent.type';
import { Project, Run } from './federation/stubs.type';
import { HarnessResolver } from './harness/harness.resolver';
import { referenceResolvers } from './references';
import { SessionResolver } from './session/session.resolver';
import { TaskResolver } from './task/task.resolver';

/** The sessions subgraph schema; needs no database, so composition can build it offline. */
export function buildSessionsSchema(): Promise<FederatedSchema> {
  return buildFederatedSchema({
    resolvers: [HarnessResolver, SessionResolver, TaskResolver, HarnessEventResolver],
    orphanedTypes: [...harnessEventTypesList, Project, Run],
    referenceResolvers,
  });
}
