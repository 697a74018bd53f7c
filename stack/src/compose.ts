import { composeServices } from '@apollo/composition';
import gql from 'graphql-tag';
import { defaultSubgraphUrl, subgraphs } from './subgraphs';

export interface Composition {
  /** Each subgraph's printed SDL, by name. */
  subgraphs: { name: string; sdl: string }[];
  supergraph: string;
}

/** Builds every subgraph's schema from code and composes the supergraph (no I/O). */
export async function composeSupergraph(): Promise<Composition> {
  const built = [];
  for (const entry of subgraphs) {
    const { sdl } = await entry.buildSchema();
    built.push({ name: entry.name, sdl, url: defaultSubgraphUrl(entry) });
  }
  const result = composeServices(built.map((b) => ({ name: b.name, url: b.url, typeDefs: gql(b.sdl) })));
  if (result.errors) {
    throw new Error(`composition failed:\n${result.errors.map((e) => `- ${e.message}`).join('\n')}`);
  }
  return { subgraphs: built.map(({ name, sdl }) => ({ name, sdl })), supergraph: result.supergraphSdl };
}
