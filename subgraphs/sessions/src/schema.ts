import { buildFederatedSchema, type FederatedSchema } from '@keelson/kit';
import { ApprovalEventResolver, ApprovalResolver } from './approval/approval.resolver';
import { CapabilityResolver } from './capability/capability.resolver';
import { HarnessEventResolver } from './event/harnessEvent.resolver';
import { harnessEventTypesList } from './event/harnessEvent.type';
import { Project, Run, Swarm } from './federation/stubs.type';
import { HarnessResolver } from './harness/harness.resolver';
import { sessionsReferenceResolvers } from './references';
import { SessionResolver } from './session/session.resolver';
import { SteerResolver } from './steer/steer.resolver';
import { TaskResolver } from './task/task.resolver';

/** The sessions subgraph schema; needs no database, so composition can build it offline. */
export function buildSessionsSchema(): Promise<FederatedSchema> {
  return buildFederatedSchema({
    resolvers: [HarnessResolver, SessionResolver, TaskResolver, HarnessEventResolver, ApprovalResolver, ApprovalEventResolver, CapabilityResolver, SteerResolver],
    orphanedTypes: [...harnessEventTypesList, Project, Run, Swarm],
    referenceResolvers: sessionsReferenceResolvers,
  });
}
