import { RemoteGraphQLDataSource, type GraphQLDataSourceProcessOptions } from '@apollo/gateway';
import type { GatewayGraphQLResponse } from '@apollo/server-gateway-interface';
import type { Fetcher, FetcherResponse } from '@apollo/utils.fetcher';
import type { Supergraph } from '@apollo/federation-internals';
import { ASSERTION_HEADER, type Caller } from '@keelson/schema';
import { traceHeaders, tracingActive, type AssertionKey, type Logger } from '@keelson/service';
import { callerCacheKey, type EntityCache } from './entityCache';
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

/** A cache hint read from a subgraph's `cache-control` answer, as Apollo's own data source reads it. */
function cacheHint(header: string | null): { maxAge: number; scope?: 'PRIVATE' | 'PUBLIC' } {
  const hint: { maxAge: number; scope?: 'PRIVATE' | 'PUBLIC' } = { maxAge: 0 };
  const directives = new Map<string, string | true>();
  for (const part of (header ?? '').trim().split(/\s*,\s*/)) {
    const [name, value] = part.split(/\s*=\s*/, 2);
    if (name) directives.set(name, value === undefined ? true : value.replace(/^"|"$/g, ''));
  }
  const maxAge = directives.get('max-age');
  if (typeof maxAge === 'string' && /^[0-9]+$/.test(maxAge)) hint.maxAge = Number(maxAge);
  if (directives.get('private') === true) hint.scope = 'PRIVATE';
  if (directives.get('public') === true) hint.scope = 'PUBLIC';
  return hint;
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
    private readonly cache?: EntityCache,
  ) {
    super({ url: endpoint.url, ...(fetcher ? { fetcher } : {}) });
  }

  /**
   * Through the entity cache (when the gateway has one): a query of a client's query operation whose
   * every field the cache policy lists is answered from it or filled by its answer; a mutation drops
   * what it may have changed when it answers. Subscriptions' fetches and everything else pass by.
   */
  override async process(options: GraphQLDataSourceProcessOptions<{ caller?: Caller }>): Promise<GatewayGraphQLResponse> {
    const cache = this.cache;
    const caller = options.context?.caller;
    // Only a client's operation (not a health check or schema load) carries the incoming request.
    if (!cache || !caller || !('incomingRequestContext' in options)) return this.shared(options);
    const incoming = options.incomingRequestContext.operation?.operation;
    const name = this.endpoint.name;
    const query = options.request.query ?? '';
    const kind = cache.kindOf(name, query);
    // The client query's whole response is kept only if every fetch it makes is cacheable (`keepResponse`).
    const context = options.context;
    if (kind.kind === 'mutation') {
      cache.noteUncacheable(context);
      const done = cache.mutationStarted(name, kind);
      try {
        return await this.send(options);
      } finally {
        done();
      }
    }
    if (kind.kind !== 'cacheable' || incoming !== 'query') {
      cache.noteUncacheable(context);
      return this.shared(options);
    }
    const key = `${query}\u0000${JSON.stringify(options.request.variables ?? {})}\u0000${callerCacheKey(caller)}`;
    const hit = cache.get(name, key);
    if (hit !== undefined) {
      // As a subgraph answering without cache-control would: the overall policy is not cacheable.
      const policy = options.incomingRequestContext.overallCachePolicy;
      if (policy && 'restrict' in policy) policy.restrict({ maxAge: 0 });
      // An entry held is current (a drop removes it as it bumps its fields' stamp).
      cache.noteFetch(context, name, kind.fields, cache.ticket(name, query, kind.fields).stamp, hit.length);
      return JSON.parse(hit) as GatewayGraphQLResponse;
    }
    const ticket = cache.ticket(name, query, kind.fields);
    // Only fetches sent since the last drop that could touch these fields share (see `EntityCache.position`).
    const response = await this.shared(options, cache.position(name, kind.fields));
    if (response.data && !response.errors?.length) {
      const json = JSON.stringify({ data: response.data });
      cache.fill(ticket, key, json);
      cache.noteFetch(context, name, kind.fields, ticket.stamp, json.length);
    } else cache.noteFailedFetch(context);
    return response;
  }

  /**
   * Deduplicates identical subgraph queries in flight: a second request for the same operation,
   * variables and caller (subject, kind, token, scopes) while the first is out waits for its answer
   * instead of fetching again. Mutations are never shared, and two callers never share a result.
   * Each sharer gets its own copy of the answer (execution may write into it).
   */
  private async shared(options: GraphQLDataSourceProcessOptions<{ caller?: Caller }>, position = ''): Promise<GatewayGraphQLResponse> {
    const caller = options.context?.caller;
    const query = options.request.query ?? '';
    if (!caller || !/^\s*(query\b|\{)/.test(query)) return this.send(options);
    const key = JSON.stringify([query, options.request.variables ?? {}, caller.kind, caller.subject, caller.tokenId ?? '', caller.scopes, position]);
    const shared = this.inflight.get(key);
    if (shared) {
      shared.joined += 1;
      return structuredClone(await shared.response);
    }
    const entry = { joined: 0, response: this.send(options) };
    this.inflight.set(key, entry);
    try {
      const response = await entry.response;
      return entry.joined > 0 ? structuredClone(response) : response;
    } finally {
      if (this.inflight.get(key) === entry) this.inflight.delete(key);
    }
  }

  /**
   * Sends one operation to the subgraph: what RemoteGraphQLDataSource's own `process` sends (the
   * operation as JSON, POST, the headers the executor set) plus the caller's signed assertion, and
   * read back as it reads it: a non-2xx answer becomes its error, the request's cache policy is
   * narrowed by the subgraph's `cache-control`. Apollo's version builds a node-fetch Headers and
   * Request per fetch that nothing reads (about 5% of the gateway's CPU per request). No APQ.
   */
  private async send(options: GraphQLDataSourceProcessOptions<{ caller?: Caller }>): Promise<GatewayGraphQLResponse> {
    const { request, context } = options;
    const caller = context?.caller;
    // Every operation reaches here with a caller (the HTTP handler or the subscription router sets it).
    if (!caller) throw new Error('a subgraph request without a caller: refusing to send it unasserted');
    if (!request.query) throw new Error('Missing query');
    const headers: Record<string, string> = {};
    if (request.http?.headers) for (const [name, value] of request.http.headers) headers[name.toLowerCase()] = value;
    headers['content-type'] = 'application/json';
    headers[ASSERTION_HEADER] = await this.assertions.sign(caller);
    // The trace continues in the subgraph (nothing to carry while tracing is off).
    if (tracingActive()) Object.assign(headers, traceHeaders());
    const { http: _http, ...operation } = request;
    let response: FetcherResponse | undefined;
    let body: object | string;
    try {
      response = await this.fetcher(this.url, { method: 'POST', headers, body: JSON.stringify(operation) });
      if (!response.ok) throw await this.errorFromResponse(response);
      body = await this.parseBody(response);
    } catch (err) {
      throw this.failure(err as Error, response);
    }
    if (typeof body !== 'object' || body === null) throw new Error(`Expected JSON response body, but received: ${body}`);
    const policy = 'incomingRequestContext' in options ? options.incomingRequestContext.overallCachePolicy : undefined;
    if (policy && 'restrict' in policy) policy.restrict(cacheHint(response.headers.get('cache-control')));
    return { ...body, http: response };
  }

  /** A subgraph that could not be reached is SERVICE_UNAVAILABLE (503); any other failure stays as it is. */
  private failure(error: Error, response: FetcherResponse | undefined): Error {
    if (response !== undefined) return error;
    this.log.warn({ err: error, subgraph: this.endpoint.name, url: this.endpoint.url }, 'subgraph unreachable');
    return gatewayError('SERVICE_UNAVAILABLE', `subgraph "${this.endpoint.name}" is unreachable; retry shortly`);
  }
}
