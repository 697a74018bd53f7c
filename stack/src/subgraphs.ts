import { buildIdentitySchema } from '@keelson/subgraph-identity';
import { buildMemorySchema } from '@keelson/subgraph-memory';
import { buildProjectsSchema } from '@keelson/subgraph-projects';
import { buildRibsSchema } from '@keelson/subgraph-ribs';
import { buildRunsSchema } from '@keelson/subgraph-runs';
import { buildSessionsSchema } from '@keelson/subgraph-sessions';
import { buildSwarmsSchema } from '@keelson/subgraph-swarms';
import type { FederatedSchema } from '@keelson/kit';

/** Every subgraph of the mesh, in boot order, with its default port. */
export interface SubgraphEntry {
  name: string;
  defaultPort: number;
  buildSchema(): Promise<FederatedSchema>;
}

export const subgraphs: SubgraphEntry[] = [
  { name: 'projects', defaultPort: 4001, buildSchema: buildProjectsSchema },
  { name: 'ribs', defaultPort: 4002, buildSchema: buildRibsSchema },
  { name: 'runs', defaultPort: 4003, buildSchema: buildRunsSchema },
  { name: 'sessions', defaultPort: 4004, buildSchema: buildSessionsSchema },
  { name: 'memory', defaultPort: 4005, buildSchema: buildMemorySchema },
  { name: 'identity', defaultPort: 4007, buildSchema: buildIdentitySchema },
  { name: 'swarms', defaultPort: 4006, buildSchema: buildSwarmsSchema },
];

/** The URL a subgraph has in the checked-in supergraph (the local default; deployments override it). */
export function defaultSubgraphUrl(entry: SubgraphEntry): string {
  return `http://127.0.0.1:${entry.defaultPort}/graphql`;
}
