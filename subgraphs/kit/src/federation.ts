import { buildSubgraphSchema, printSubgraphSchema } from '@apollo/subgraph';
import type { GraphQLResolverMap } from '@apollo/subgraph/dist/schema-helper';
import { printSchemaWithDirectives } from '@graphql-tools/utils';
import { isObjectType, type GraphQLSchema } from 'graphql';
import gql from 'graphql-tag';
import { buildSchema, createResolversMap, getMetadataStorage, type BuildSchemaOptions, type NonEmptyArray, type PubSub } from 'type-graphql';
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
 * The fields type-graphql resolves by reading the property of the same name, with no middleware,
 * roles or field resolver: per object type name, their names. graphql-js's default resolver reads
 * them alike, without type-graphql's wrapper (an object and a middleware pass per field of every
 * item a list returns).
 */
function propertyFields(schema: GraphQLSchema): Map<string, Set<string>> {
  const storage = getMetadataStorage();
  // Several subgraphs may declare a type of one name (an entity each extends) in one process: a
  // field counts only when no class of that name resolves it otherwise.
  const plain = new Map<string, Set<string>>();
  const resolved = new Map<string, Set<string>>();
  const add = (map: Map<string, Set<string>>, type: string, field: string) => (map.get(type) ?? map.set(type, new Set()).get(type)!).add(field);
  for (const r of storage.fieldResolvers) {
    const target = r.getObjectType?.();
    for (const o of storage.objectTypes) if (o.target === target) add(resolved, o.name, r.methodName);
  }
  for (const objectType of storage.objectTypes) {
    const type = schema.getType(objectType.name);
    if (!type || !isObjectType(type)) continue;
    for (const field of objectType.fields ?? []) {
      const wrapped = field.name !== field.schemaName || !!field.middlewares?.length || !!field.roles;
      add(wrapped ? resolved : plain, objectType.name, field.name);
    }
  }
  for (const [type, names] of plain) for (const name of resolved.get(type) ?? []) names.delete(name);
  return plain;
}

/** The resolver map of `raw` less the fields graphql-js's default resolver serves alike. */
function resolversOf(raw: GraphQLSchema, options: Partial<BuildSchemaOptions> | undefined): ReferenceResolvers {
  const resolvers = createResolversMap(raw) as ReferenceResolvers;
  if (options?.globalMiddlewares?.length || options?.authChecker) return resolvers;
  for (const [type, names] of propertyFields(raw)) {
    const fields = resolvers[type] as Record<string, unknown> | undefined;
    if (fields) for (const name of names) delete fields[name];
  }
  return resolvers;
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
  const resolvers = mergeResolverMaps(resolversOf(raw, opts.buildOptions), opts.referenceResolvers);
  const schema = buildSubgraphSchema({ typeDefs, resolvers });
  return { schema, sdl: printSubgraphSchema(schema) };
}
