import { buildFederatedSchema, type FederatedSchema } from '@keelson/kit';
import { ProjectEventResolver } from './event/projectEvent.resolver';
import { LockResolver } from './lock/lock.resolver';
import { ProjectResolver } from './project/project.resolver';
import { projectsReferenceResolvers } from './project/project.reference';
import { WorkspaceResolver } from './workspace/workspace.resolver';

/** The projects subgraph schema; needs no database, so composition can build it offline. */
export function buildProjectsSchema(): Promise<FederatedSchema> {
  return buildFederatedSchema({
    resolvers: [ProjectResolver, WorkspaceResolver, LockResolver, ProjectEventResolver],
    referenceResolvers: projectsReferenceResolvers,
  });
}
