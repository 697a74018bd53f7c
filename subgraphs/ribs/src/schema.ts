import { buildFederatedSchema, type FederatedSchema } from '@keelson/kit';
import { ActionResolver } from './action/action.resolver';
import { ChatResolver } from './chat/chat.resolver';
import { CommandResolver } from './command/command.resolver';
import { ManifestResolver } from './manifest/manifest.resolver';
import { ribsReferenceResolvers } from './rib/rib.reference';
import { RibManifestResolver, RibResolver } from './rib/rib.resolver';
import { SnapshotResolver } from './snapshot/snapshot.resolver';
import { ToolResolver } from './tool/tool.resolver';

/** The ribs subgraph schema; needs no database and no rib, so composition can build it offline. */
export function buildRibsSchema(): Promise<FederatedSchema> {
  return buildFederatedSchema({
    resolvers: [RibResolver, RibManifestResolver, SnapshotResolver, ActionResolver, CommandResolver, ToolResolver, ManifestResolver, ChatResolver],
    referenceResolvers: ribsReferenceResolvers,
  });
}
