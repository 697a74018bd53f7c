import { buildFederatedSchema, type FederatedSchema } from '@keelson/kit';
import { WorkflowResolver } from './catalog/workflow.resolver';
import { RunEventResolver } from './event/runEvent.resolver';
import { ProjectRunsResolver, RibRunsResolver } from './federation/federation.resolver';
import { Project } from './federation/project.type';
import { runsReferenceResolvers } from './federation/references';
import { Rib } from './federation/rib.type';
import { OpFrameResolver, OpResolver } from './op/op.resolver';
import { RunResolver } from './run/run.resolver';

/** The runs subgraph schema; needs no database, so composition can build it offline. */
export function buildRunsSchema(): Promise<FederatedSchema> {
  return buildFederatedSchema({
    resolvers: [WorkflowResolver, RunResolver, RunEventResolver, OpResolver, OpFrameResolver, ProjectRunsResolver, RibRunsResolver],
    // Owned by the projects and ribs subgraphs: declared here for the fields runs adds.
    orphanedTypes: [Project, Rib],
    referenceResolvers: runsReferenceResolvers,
  });
}
