import type { Schema } from '@apollo/federation-internals';
import { executeQueryPlan, type buildOperationContext, type GraphQLDataSource } from '@apollo/gateway';
import type { FetchNode, PlanNode, QueryPlan } from '@apollo/query-planner';
import type { Caller } from '@keelson/schema';
import type { Logger } from '@keelson/service';
import { GraphQLError, type DocumentNode, type ExecutionResult, type FormattedExecutionResult, type GraphQLFormattedError, type GraphQLSchema } from 'graphql';
import { gatewayError } from './errors';
import type { SubgraphEndpoint } from './subgraphEndpoints';
import { describeClose, UpstreamErrors, type ConnectionLinks, type UpstreamLink } from './upstreamPool';

// One upstream subscription, completed and serialized once per event and handed to every identical
// downstream subscription of one caller: 1,000 clients of one stream cost the subgraph one tail and
// the gateway one completion and one JSON serialization per event, not 1,000.

/** One accepted subscription: what to send upstream and how to complete each event. */
export interface Route {
  /** The root field's response name, for logs. */
  field: string;
  endpoint: SubgraphEndpoint;
  /** The subscription operation the owning subgraph receives. */
  primary: FetchNode;
  /** Entity fetches that complete each event with fields other subgraphs own. */
  rest: PlanNode | undefined;
  document: DocumentNode;
  operationContext: ReturnType<typeof buildOperationContext>;
  variables: Record<string, unknown>;
  query: string;
  operationName: string | undefined;
}

type RequestContext = Parameters<typeof executeQueryPlan>[2];

/** The graph's parts a subscription was planned with (kept across reloads). */
export interface Shared {
  supergraphSchema: GraphQLSchema;
  apiSchema: Schema;
  dataSources: Readonly<Record<string, GraphQLDataSource>>;
  maxQueuedEvents: number;
  /** The `payload` of a graphql-ws `next` message for a completed event, as JSON (errors formatted for clients). */
  serializeEvent(result: ExecutionResult): string;
  log: Logger;
  /** Feeds still open to new members, by `feedKey`. */
  feeds: Map<string, UpstreamFeed>;
}

/** What a feed hands its members: each completed event, in upstream order, then the end. */
export interface FeedMember {
  /** One completed event: the JSON of its `next` payload, the same string for every member. */
  deliver(payloadJson: string): void;
  /** The upstream completed (no failure) or failed. Called once; nothing is delivered after. */
  end(failure?: Error): void;
}

/**
 * Which subscriptions may share a feed: the same document, operation name and variables (so the same
 * upstream operation and the same completed result), on the same graph, for the same caller — every
 * field of it (subject, kind, token, scopes): results and the assertion the subgraph sees are never
 * shared between two callers.
 */
export function feedKey(route: Route, caller: Caller): string {
  return JSON.stringify([route.endpoint.name, route.query, route.operationName ?? null, route.variables, caller]);
}

/**
 * Joins the open feed for `route` and the caller of `links`, or opens one on that caller's upstream link.
 * A feed takes new members only until its first upstream event arrives: a later member would miss
 * what was already delivered, so it gets a feed (and an upstream subscription) of its own.
 */
export function joinFeed(route: Route, links: ConnectionLinks, shared: Shared, member: FeedMember): UpstreamFeed {
  const key = feedKey(route, links.caller);
  const open = shared.feeds.get(key);
  if (open?.join(member)) return open;
  const feed = new UpstreamFeed(route, links, shared, () => {
    if (shared.feeds.get(key) === feed) shared.feeds.delete(key);
  });
  feed.join(member);
  shared.feeds.set(key, feed);
  feed.start();
  return feed;
}

/**
 * One upstream subscription on its caller's link (acquired through its first member's connection).
 * Each upstream event is completed once through the query plan and delivered to every member in
 * arrival order; a member that leaves stops nothing but itself, the last one to leave cancels
 * upstream at once.
 */
export class UpstreamFeed {
  private readonly members = new Set<FeedMember>();
  /** An event arrived (or the feed ended): no more members. */
  private sealed = false;
  private ended = false;
  /** Serializes per-event work so events reach members in upstream order. */
  private pipeline: Promise<void> = Promise.resolve();
  private stopUpstream: (() => void) | undefined;
  private releaseLink: (() => void) | undefined;

  constructor(
    private readonly route: Route,
    private readonly links: ConnectionLinks,
    private readonly shared: Shared,
    /** Forgets the feed in the registry once it is sealed or ended. */
    private readonly unlist: () => void,
  ) {}

  /** Adds a member; false once the feed is sealed. */
  join(member: FeedMember): boolean {
    if (this.sealed) return false;
    this.members.add(member);
    return true;
  }

  /** Removes a member; the last one cancels upstream. */
  leave(member: FeedMember): void {
    if (!this.members.delete(member) || this.members.size > 0 || this.ended) return;
    this.ended = true;
    this.seal();
    this.cleanUp();
  }

  start(): void {
    const { route, shared } = this;
    let acquired: ReturnType<ConnectionLinks['acquire']>;
    try {
      acquired = this.links.acquire(route.endpoint);
    } catch {
      this.finish(gatewayError('SERVICE_UNAVAILABLE', 'the connection is closing; subscribe again'));
      return;
    }
    const { link, release } = acquired;
    this.releaseLink = release;
    const variables: Record<string, unknown> = {};
    for (const name of route.primary.variableUsages ?? []) {
      if (route.variables[name] !== undefined) variables[name] = route.variables[name];
    }
    this.stopUpstream = link.client.subscribe(
      { query: route.primary.operation, variables, operationName: route.primary.operationName },
      {
        next: (event) => {
          this.seal();
          this.enqueue(async () => {
            const payloadJson = shared.serializeEvent(await this.complete(event as FormattedExecutionResult));
            for (const member of [...this.members]) member.deliver(payloadJson);
          });
        },
        error: (err) => this.enqueue(() => this.finish(this.upstreamFailure(err, link))),
        complete: () => this.enqueue(() => this.finish()),
      },
    );
    shared.log.debug({ subgraph: route.endpoint.name, field: route.field }, 'subscription routed');
  }

  private seal(): void {
    if (this.sealed) return;
    this.sealed = true;
    this.unlist();
  }

  /** Runs `step` after every earlier event's step; a step that throws ends the feed masked. */
  private enqueue(step: () => void | Promise<void>): void {
    this.pipeline = this.pipeline
      .then(() => (this.ended ? undefined : step()))
      .catch((err: unknown) => this.finish(new GraphQLError('completing a subscription event failed', { originalError: err as Error })));
  }

  /**
   * Completes one upstream event as the gateway completes a query: through the query plan, with
   * the owning subgraph's answer replayed as the primary fetch, so fields of other subgraphs are
   * fetched as `_entities` and the result is shaped (aliases, `__typename`, nullability) to the
   * client's selection.
   */
  private async complete(event: FormattedExecutionResult): Promise<ExecutionResult> {
    const { route, shared } = this;
    const owner = shared.dataSources[route.endpoint.name];
    const replay: GraphQLDataSource = {
      process: (options) =>
        options.request.query === route.primary.operation
          ? Promise.resolve({ data: event.data ?? null, errors: event.errors as GraphQLError[] | undefined })
          : owner!.process(options),
    };
    const plan: QueryPlan = {
      kind: 'QueryPlan',
      node: route.rest ? { kind: 'Sequence', nodes: [route.primary, route.rest] } : route.primary,
    };
    // executeQueryPlan reads only these fields of Apollo Server's request context.
    const requestContext = {
      request: { query: route.query, operationName: route.operationName, variables: route.variables },
      context: { caller: this.links.caller },
      metrics: {},
      logger: shared.log,
    } as unknown as RequestContext;
    const result = await executeQueryPlan(
      plan,
      { ...shared.dataSources, [route.endpoint.name]: replay },
      requestContext,
      route.operationContext,
      shared.supergraphSchema,
      shared.apiSchema,
    );
    // Apollo Gateway reports a null in a non-null position as `extensions.valueCompletion` when
    // nothing else failed; an event has no response extensions, so it becomes the event's error.
    const errors = result.errors?.length ? result.errors : (result.extensions?.valueCompletion as GraphQLError[] | undefined) ?? [];
    return { data: result.data ?? null, ...(errors.length ? { errors } : {}) };
  }

  private upstreamFailure(err: unknown, link: UpstreamLink): Error {
    const { endpoint, field } = this.route;
    if (Array.isArray(err)) return new UpstreamErrors(err as GraphQLFormattedError[]);
    this.shared.log.warn({ subgraph: endpoint.name, url: endpoint.wsUrl, field, reason: describeClose(err) }, 'upstream subscription failed');
    return gatewayError(
      'SERVICE_UNAVAILABLE',
      link.everAcked
        ? `subscription ${field} ended: the connection to subgraph "${endpoint.name}" was lost (${describeClose(err)}); resubscribe from the last cursor it saw`
        : `subscription ${field} failed: subgraph "${endpoint.name}" is unreachable; retry shortly`,
      { subgraph: endpoint.name },
    );
  }

  /** Ends the feed once: every member learns it ended (with `failure`, if any). */
  private finish(failure?: Error): void {
    if (this.ended) return;
    this.ended = true;
    this.seal();
    this.cleanUp();
    const members = [...this.members];
    this.members.clear();
    for (const member of members) member.end(failure);
  }

  private cleanUp(): void {
    this.stopUpstream?.();
    this.stopUpstream = undefined;
    this.releaseLink?.();
    this.releaseLink = undefined;
  }
}
