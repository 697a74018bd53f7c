import { operationFromDocument, type Schema, type Supergraph } from '@apollo/federation-internals';
import { buildOperationContext } from '@apollo/gateway';
import { QueryPlanner } from '@apollo/query-planner';
import type { Caller } from '@keelson/schema';
import { parseLimited, type RequestLimits } from '@keelson/service';
import { getOperationAST, getVariableValues, GraphQLError, validate, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode, type ValidationRule } from 'graphql';
import type { SubscribePayload } from 'graphql-ws';
import { checkScopes, type ScopeMap } from '@keelson/service';
import { gatewayError } from './errors';
import type { SubgraphEndpoint } from './subgraphEndpoints';
import type { Route } from './upstreamFeed';

/** Documents whose parse, validation and plan are kept, per graph. */
const MAX_CACHED_DOCUMENTS = 500;

export interface PlannerGraph {
  /** The API schema clients validate against (graphql-js). */
  schema: GraphQLSchema;
  supergraph: Supergraph;
  scopeMap: ScopeMap;
  endpoints: ReadonlyMap<string, SubgraphEndpoint>;
}

/** What one document (text and operation name) comes to, whoever sends it with whatever variables. */
type Prepared =
  | { errors: GraphQLError[] }
  | {
      document: DocumentNode;
      operation: OperationDefinitionNode;
      /** Scope sets (JSON) already found to allow every field of the document. */
      allowed: Set<string>;
      /** Planned on first use (after the first caller passed the scope check). */
      planned?: Pick<Route, 'field' | 'endpoint' | 'primary' | 'rest' | 'operationContext'>;
    };

/**
 * Parses, validates, authorizes and plans subscribe payloads against one graph. Parsing, validation
 * (with the request limits) and the query plan depend on the document alone, so a document sent again
 * — a thousand clients of one stream — reuses them; the scope check runs per caller (a positive answer
 * is kept per scope set) and the variables are coerced per subscription.
 */
export class SubscriptionPlanner {
  private readonly prepared = new Map<string, Prepared>();
  private readonly planner: QueryPlanner;
  private readonly apiSchema: Schema;

  constructor(
    private readonly graph: PlannerGraph,
    private readonly limits: RequestLimits,
    private readonly rules: readonly ValidationRule[],
  ) {
    this.planner = new QueryPlanner(graph.supergraph);
    this.apiSchema = graph.supergraph.apiSchema();
  }

  /** A route, or the errors that reject the payload. */
  plan(payload: SubscribePayload, caller: Caller): Route | GraphQLError[] {
    const operationName = payload.operationName ?? undefined;
    const prepared = this.prepare(payload.query, operationName);
    if ('errors' in prepared) return prepared.errors;
    const { schema, scopeMap, endpoints } = this.graph;
    const { document, operation } = prepared;
    const scopes = JSON.stringify(caller.scopes);
    if (!prepared.allowed.has(scopes)) {
      const denied = checkScopes(schema, scopeMap, document, operation, caller);
      if (denied) return [denied];
      prepared.allowed.add(scopes);
    }
    const variables = payload.variables ?? {};
    const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables);
    if (coerced.errors) {
      return coerced.errors.map((e) => new GraphQLError(e.message, { nodes: e.nodes, extensions: { code: 'BAD_USER_INPUT', status: 400 } }));
    }
    if (!prepared.planned) {
      const queryPlan = this.planner.buildQueryPlan(operationFromDocument(this.apiSchema, document, { operationName }));
      const node = queryPlan.node;
      if (node?.kind !== 'Subscription') throw new Error(`expected a subscription plan, got ${node?.kind ?? 'none'}`);
      const endpoint = endpoints.get(node.primary.serviceName);
      if (!endpoint) throw new Error(`the plan names subgraph "${node.primary.serviceName}", which has no endpoint`);
      const [root] = operation.selectionSet.selections;
      prepared.planned = {
        field: root?.kind === 'Field' ? (root.alias ?? root.name).value : '(fragment)',
        endpoint,
        primary: node.primary,
        rest: node.rest && !(node.rest.kind === 'Sequence' && node.rest.nodes.length === 0) ? node.rest : undefined,
        operationContext: buildOperationContext({ schema, operationDocument: document, operationName }),
      };
    }
    return { ...prepared.planned, document, variables, query: payload.query, operationName };
  }

  /** The cached outcome for a document, or a fresh one (the oldest entry goes when the cache is full). */
  private prepare(query: string, operationName: string | undefined): Prepared {
    const key = `${operationName ?? ''}\u0000${query}`;
    const cached = this.prepared.get(key);
    if (cached) return cached;
    const prepared = this.parseAndValidate(query, operationName);
    if (this.prepared.size >= MAX_CACHED_DOCUMENTS) this.prepared.delete(this.prepared.keys().next().value!);
    this.prepared.set(key, prepared);
    return prepared;
  }

  private parseAndValidate(query: string, operationName: string | undefined): Prepared {
    const { schema } = this.graph;
    let document: DocumentNode;
    try {
      document = parseLimited(query, this.limits);
    } catch (err) {
      const e = err as GraphQLError;
      return { errors: [new GraphQLError(e.message, { source: e.source, positions: e.positions, extensions: { code: 'GRAPHQL_PARSE_FAILED', status: 400 } })] };
    }
    const invalid = validate(schema, document, this.rules);
    if (invalid.length > 0) {
      return {
        errors: invalid.map((e) => new GraphQLError(e.message, {
          nodes: e.nodes,
          extensions: { ...e.extensions, code: 'GRAPHQL_VALIDATION_FAILED', status: 400 },
        })),
      };
    }
    const operation = getOperationAST(document, operationName);
    if (!operation) {
      return {
        errors: [gatewayError('BAD_REQUEST', operationName
          ? `the document has no operation named "${operationName}"`
          : 'the document has several operations: name the one to run in operationName')],
      };
    }
    if (operation.operation !== 'subscription') {
      return { errors: [gatewayError('BAD_REQUEST', `the gateway's WebSocket serves subscriptions only; send this ${operation.operation} over HTTP POST`)] };
    }
    return { document, operation, allowed: new Set() };
  }
}
