import { buildSubgraphSchema, printSubgraphSchema } from '@apollo/subgraph';
import type { GraphQLResolverMap } from '@apollo/subgraph/dist/schema-helper';
import { printSchemaWithDirectives } from '@graphql-tools/utils';
import type { GraphQLSchema } from 'graphql';
import gql from 'graphql-tag';
import { buildSchema, createResolversMap, type BuildSchemaOptions, type NonEmptyArray, type PubSub } from 'type-graphql';
import { scalarsMap } from './scalars';

/** The Federation 2 spec version and the directives every subgraph may use. */
export const FEDERATION_LINK =
  'extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key", "@shareable", "@external", "@requires", "@provides", "@inaccessible", "@tag", "@override", "@interfaceObject", "@authenticated", "@requiresScopes"])';

export type ReferenceResolvers = GraphQLResolverMap<unknown>;

export interface FederatedSchemaOptions {
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  resolvers: NonEmptyArray<Function>;
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  orphanedTypes?: Function[];
  /** `__resolveReference` (and any hand-written field) per entity type. */
  referenceResolvers?: ReferenceResolvers;
  buildOptions?: Partial<BuildSchemaOptions>;
}

export interface FederatedSchema {
  /** The executable subgraph schema (with `_entities` / `_service`). */
  schema: GraphQLSchema;
  /** The SDL composition reads: `printSubgraphSchema` of the built subgraph schema. */
  sdl: string;
}

/**
 * Subscriptions stream from the event log (`subscribe` returning `EventLog.tail`), never from
 * in-memory topics, which would lose events across processes and restarts.
 */
const eventLogOnly: PubSub = {
  publish() {
    throw new Error('in-memory pub/sub is not used: append to the event log instead');
  },
  subscribe() {
    throw new Error('topic subscriptions are not used: subscribe with EventLog.tail');
  },
};

function mergeResolverMaps(a: ReferenceResolvers, b: ReferenceResolvers | undefined): ReferenceResolvers {
  const merged: ReferenceResolvers = { ...a };
  for (const [type, fields] of Object.entries(b ?? {})) {
    const existing = merged[type];
    merged[type] = existing && typeof existing === 'object' && typeof fields === 'object'
      ? ({ ...existing, ...fields } as ReferenceResolvers[string])
      : fields;
  }
  return merged;
}

/**
 * type-graphql classes → an Apollo Federation 2 subgraph schema: build without the root-type check,
 * print with directives, prepend the federation `@link`, then `buildSubgraphSchema` with the
 * type-graphql resolvers plus the reference resolvers.
 */
export async function buildFederatedSchema(opts: FederatedSchemaOptions): Promise<FederatedSchema> {
  const raw = await buildSchema({
    ...opts.buildOptions,
    resolvers: opts.resolvers,
    orphanedTypes: opts.orphanedTypes,
    scalarsMap,
    pubSub: eventLogOnly,
    validate: false,
    skipCheck: true,
  });
  const typeDefs = gql(`${FEDERATION_LINK}\n\n${printSchemaWithDirectives(raw)}`);
  const resolvers = mergeResolverMaps(createResolversMap(raw) as ReferenceResolvers, opts.referenceResolvers);
  const schema = buildSubgraphSchema({ typeDefs, resolvers });
  return { schema, sdl: printSubgraphSchema(schema) };
}
