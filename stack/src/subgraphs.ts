import { buildProjectsSchema } from '@keelson/subgraph-projects';
import type { FederatedSchema } from '@keelson/kit';

/** Every subgraph of the mesh, in boot order, with its default port. */
export interface SubgraphEntry {
  name: string;
  defaultPort: number;
  buildSchema(): Promise<FederatedSchema>;
}

export const subgraphs: SubgraphEntry[] = [{ name: 'projects', defaultPort: 4001, buildSchema: buildProjectsSchema }];

/** The URL a subgraph has in the checked-in supergraph (the local default; deployments override it). */
export function defaultSubgraphUrl(entry: SubgraphEntry): string {
  return `http://127.0.0.1:${entry.defaultPort}/graphql`;
}
