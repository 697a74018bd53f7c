import { RemoteGraphQLDataSource, type GraphQLDataSourceProcessOptions } from '@apollo/gateway';
import type { GatewayGraphQLResponse } from '@apollo/server-gateway-interface';
import type { Fetcher } from '@apollo/utils.fetcher';
import type { Supergraph } from '@apollo/federation-internals';
import { ASSERTION_HEADER, type Caller } from '@keelson/schema';
import { traceHeaders, tracingActive, type AssertionKey, type Logger } from '@keelson/service';
import { gatewayError } from './errors';

/** Where one subgraph is served. */
export interface SubgraphEndpoint {
  /** The subgraph's name in the supergraph (`@join__graph(name:)`). */
  name: string;
  /** http(s)://…/graphql — queries, mutations and entity fetches. */
  url: string;
  /** ws(s)://…/graphql — the same path, for graphql-ws subscriptions. */
  wsUrl: string;
}

/**
 * Each subgraph's endpoint: the URL recorded in the supergraph's `@join__graph` directive unless
 * `overrides` names the subgraph. An override naming no subgraph of the supergraph, a missing URL or
 * a URL that is not http(s) fails here, before anything binds.
 */
export function resolveSubgraphEndpoints(
  supergraph: Supergraph,
  overrides: Record<string, string> = {},
): Map<string, SubgraphEndpoint> {
  const recorded = supergraph.subgraphsMetadata();
  const names = recorded.map((s) => s.name);
  for (const name of Object.keys(overrides)) {
    if (!names.includes(name)) {
      throw new Error(`subgraphUrls names "${name}", which is not a subgraph of the supergraph (it has: ${names.join(', ')})`);
    }
  }
  const endpoints = new Map<string, SubgraphEndpoint>();
  for (const { name, url: recordedUrl } of recorded) {
    const raw = overrides[name] ?? recordedUrl;
    if (!raw) throw new Error(`subgraph "${name}" has no URL in the supergraph and none in subgraphUrls`);
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new Error(`subgraph "${name}": "${raw}" is not a URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new Error(`subgraph "${name}": expected an http(s) URL, got "${raw}"`);
    }
    const ws = new URL(url.href);
    ws.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    endpoints.set(name, { name, url: url.href, wsUrl: ws.href });
  }
  return endpoints;
}

/**
 * The HTTP data source for one subgraph. It sends only the subgraph operation the query planner
 * built (no client header, cookie or connection parameter is forwarded) plus the gateway's signed
 * assertion of the caller, and turns a subgraph that cannot be reached into `SERVICE_UNAVAILABLE`
 * (503) instead of a masked internal error.
 */
export class SubgraphDataSource extends RemoteGraphQLDataSource<{ caller?: Caller }> {
  /** Identical queries in flight, by subgraph, document, variables and caller: one fetch answers them all. */
  private readonly inflight = new Map<string, { joined: number; response: Promise<GatewayGraphQLResponse> }>();

  constructor(
    private readonly endpoint: SubgraphEndpoint,
    private readonly assertions: AssertionKey,
    private readonly log: Logger,
    fetcher?: Fetcher,
  ) {
    super({ url: endpoint.url, ...(fetcher ? { fetcher } : {}) });
  }

  /**
   * Deduplicates identical subgraph queries in flight: a second request for the same operation,
   * variables and caller (subject, kind, token, scopes) while the first is out waits for its answer
   * instead of fetching again. Mutations are never shared, and two callers never share a result.
   * Each sharer gets its own copy of the answer (execution may write into it).
   */
  override async process(options: GraphQLDataSourceProcessOptions<{ caller?: Caller }>): Promise<GatewayGraphQLResponse> {
    const caller = options.context?.caller;
    const query = options.request.query ?? '';
    if (!caller || !/^\s*(query\b|\{)/.test(query)) return super.process(options);
    const key = JSON.stringify([query, options.request.variables ?? {}, caller.kind, caller.subject, caller.tokenId ?? '', caller.scopes]);
    const shared = this.inflight.get(key);
    if (shared) {
      shared.joined += 1;
      return structuredClone(await shared.response);
    }
    const entry = { joined: 0, response: super.process(options) };
    this.inflight.set(key, entry);
    try {
      const response = await entry.response;
      return entry.joined > 0 ? structuredClone(response) : response;
    } finally {
      if (this.inflight.get(key) === entry) this.inflight.delete(key);
    }
  }

  override async willSendRequest({ request, context }: GraphQLDataSourceProcessOptions<{ caller?: Caller }>): Promise<void> {
    const caller = context?.caller;
    // Every operation reaches here with a caller (the HTTP handler or the subscription router sets it).
    if (!caller) throw new Error('a subgraph request without a caller: refusing to send it unasserted');
    request.http?.headers.set(ASSERTION_HEADER, await this.assertions.sign(caller));
    // The trace continues in the subgraph (nothing to carry while tracing is off).
    if (tracingActive()) for (const [name, value] of Object.entries(traceHeaders())) request.http?.headers.set(name, value);
  }

  override didEncounterError(error: Error, _request: unknown, response?: unknown): void {
    if (response === undefined) {
      this.log.warn({ err: error, subgraph: this.endpoint.name, url: this.endpoint.url }, 'subgraph unreachable');
      throw gatewayError('SERVICE_UNAVAILABLE', `subgraph "${this.endpoint.name}" is unreachable; retry shortly`);
    }
    throw error;
  }
}
