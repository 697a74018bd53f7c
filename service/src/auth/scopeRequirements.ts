import { satisfiesScopes, type Caller } from '@keelson/schema';
import {
  getNamedType,
  isObjectType,
  Kind,
  TypeInfo,
  visit,
  visitWithTypeInfo,
  GraphQLError,
  type DirectiveNode,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValueNode,
} from 'graphql';

/** What one field or type demands: an authenticated caller, and (if set) one of these scope sets. */
export interface Requirement {
  authenticated: boolean;
  /** `@requiresScopes(scopes:)`: an OR of AND-sets. Empty: no scope demanded. */
  scopes: string[][];
}

/**
 * Requirements by `Type.field` (fields) and by `Type` (types), read from a schema's directives: the
 * supergraph's at the gateway, a subgraph's own in that subgraph — one rule table, checked twice.
 */
export interface ScopeMap {
  fields: Map<string, Requirement>;
  types: Map<string, Requirement>;
}

function stringList(value: ValueNode): string[][] {
  if (value.kind !== Kind.LIST) return [];
  return value.values.map((inner) => (inner.kind === Kind.LIST ? inner.values.flatMap((v) => (v.kind === Kind.STRING || v.kind === Kind.ENUM ? [v.value] : [])) : []));
}

function requirementOf(directives: readonly DirectiveNode[] | undefined): Requirement | undefined {
  let found: Requirement | undefined;
  for (const d of directives ?? []) {
    if (d.name.value === 'authenticated') found = { authenticated: true, scopes: found?.scopes ?? [] };
    if (d.name.value === 'requiresScopes') {
      const arg = d.arguments?.find((a) => a.name.value === 'scopes');
      found = { authenticated: true, scopes: arg ? stringList(arg.value) : [] };
    }
  }
  return found;
}

/**
 * Reads `@authenticated` / `@requiresScopes` off every field and type of a schema built from SDL: the
 * supergraph (composition keeps them: it links both specs `for: SECURITY`) or a subgraph's.
 */
export function readScopeMap(supergraph: GraphQLSchema): ScopeMap {
  const map: ScopeMap = { fields: new Map(), types: new Map() };
  for (const type of Object.values(supergraph.getTypeMap())) {
    if (type.name.startsWith('__') || !isObjectType(type)) continue;
    const own = requirementOf(type.astNode?.directives);
    if (own) map.types.set(type.name, own);
    for (const field of Object.values(type.getFields())) {
      const req = requirementOf(field.astNode?.directives);
      if (req) map.fields.set(`${type.name}.${field.name}`, req);
    }
  }
  return map;
}

/** The root fields (`Query.x`, `Mutation.y`, `Subscription.z`) of the schema that declare no requirement. */
export function undeclaredRootFields(schema: GraphQLSchema, map: ScopeMap): string[] {
  const missing: string[] = [];
  for (const root of [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()]) {
    if (!root) continue;
    for (const name of Object.keys(root.getFields())) {
      if (name.startsWith('_')) continue;
      if (!map.fields.has(`${root.name}.${name}`)) missing.push(`${root.name}.${name}`);
    }
  }
  return missing;
}

/**
 * Checks one operation against the caller before anything is planned: every selected field (through
 * fragments) and every object type it reaches must be satisfied by the caller's scopes.
 * @returns the FORBIDDEN error naming the first unmet field and the scope it needs, or undefined.
 */
export function checkScopes(schema: GraphQLSchema, map: ScopeMap, document: DocumentNode, operation: OperationDefinitionNode, caller: Caller): GraphQLError | undefined {
  let denied: GraphQLError | undefined;
  const fragments = new Map(document.definitions.flatMap((d) => (d.kind === Kind.FRAGMENT_DEFINITION ? [[d.name.value, d] as const] : [])));
  const seen = new Set<string>();
  const check = (label: string, req: Requirement | undefined) => {
    if (!req || denied) return;
    if (satisfiesScopes(caller.scopes, req.scopes)) return;
    const needed = req.scopes.map((set) => set.join(' and ')).join(', or ');
    denied = new GraphQLError(`${label} needs scope ${needed}; the caller (${caller.subject}) has ${caller.scopes.join(', ') || 'none'}`, {
      extensions: { requiredScopes: req.scopes, http: { status: 403 }, code: 'FORBIDDEN', status: 403 },
    });
  };
  const walk = (node: OperationDefinitionNode | FragmentDefinitionNode) => {
    // A TypeInfo per walk: a fragment is walked from inside another walk's visit.
    const typeInfo = new TypeInfo(schema);
    visit(
      node,
      visitWithTypeInfo(typeInfo, {
        Field(field) {
          const parent = typeInfo.getParentType();
          const def = typeInfo.getFieldDef();
          if (!parent || !def) return;
          check(`${parent.name}.${field.name.value}`, map.fields.get(`${parent.name}.${def.name}`));
          const named = getNamedType(def.type);
          if (named) check(named.name, map.types.get(named.name));
        },
        FragmentSpread(spread) {
          const name = spread.name.value;
          const fragment = fragments.get(name);
          if (!fragment || seen.has(name)) return;
          seen.add(name);
          walk(fragment);
        },
      }),
    );
  };
  walk(operation);
  return denied;
}
