import type { Schema } from '@apollo/federation-internals';
import { executeQueryPlan, type buildOperationContext, type GraphQLDataSource } from '@apollo/gateway';
import type { FetchNode, PlanNode, QueryPlan } from '@apollo/query-planner';
import { closeCodes } from '@keelson/schema';
import type { Logger } from '@keelson/service';
import { GraphQLError, type DocumentNode, type ExecutionResult, type FormattedExecutionResult, type GraphQLFormattedError, type GraphQLSchema } from 'graphql';
import { gatewayError } from './errors';
import type { SubgraphEndpoint } from './subgraphEndpoints';
import { describeClose, UpstreamErrors, type UpstreamLink, type UpstreamPool } from './upstreamPool';

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

/** What `onSubscribe` hands to `subscribe` through graphql-ws's execution args. */
export interface RouteContext {
  route: Route;
  pool: UpstreamPool;
  /** The graph's parts the subscription was planned with (kept across reloads). */
  shared: Shared;
}


type RequestContext = Parameters<typeof executeQueryPlan>[2];

export interface Shared {
  supergraphSchema: GraphQLSchema;
  apiSchema: Schema;
  dataSources: Readonly<Record<string, GraphQLDataSource>>;
  maxQueuedEvents: number;
  log: Logger;
}

/**
 * One subscription routed to its owning subgraph: an async iterator the graphql-ws server drains.
 * The upstream subscription opens on the first `next()`; events are completed (entity fetches) and
 * buffered in arrival order; `return()` — the client completed or disconnected — cancels upstream
 * at once, wherever the upstream handshake stands.
 */
export class RoutedSubscription implements AsyncIterableIterator<ExecutionResult, undefined> {
  private readonly buffer: ExecutionResult[] = [];
  private failure: Error | undefined;
  /** Nothing more will be buffered: the upstream completed or failed. */
  private finished = false;
  /** The consumer left (`return()`): nothing more will be delivered. */
  private cancelled = false;
  private started = false;
  private wake: (() => void) | undefined;
  /** Serializes per-event work so events reach the client in upstream order. */
  private pipeline: Promise<void> = Promise.resolve();
  private stopUpstream: (() => void) | undefined;
  private releaseLink: (() => void) | undefined;

  constructor(
    private readonly route: Route,
    private readonly pool: UpstreamPool,
    private readonly shared: Shared,
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<ExecutionResult, undefined>> {
    if (!this.started) this.start();
    for (;;) {
      if (this.cancelled) return { done: true, value: undefined };
      const value = this.buffer.shift();
      if (value) return { done: false, value };
      if (this.failure) {
        const failure = this.failure;
        this.failure = undefined;
        this.cancelled = true;
        throw failure;
      }
      if (this.finished) return { done: true, value: undefined };
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  async return(): Promise<IteratorResult<ExecutionResult, undefined>> {
    this.cancelled = true;
    this.buffer.length = 0;
    this.cleanUp();
    this.notify();
    return { done: true, value: undefined };
  }

  async throw(err: unknown): Promise<IteratorResult<ExecutionResult, undefined>> {
    await this.return();
    throw err;
  }

  private start(): void {
    this.started = true;
    const { route, shared } = this;
    let acquired: ReturnType<UpstreamPool['acquire']>;
    try {
      acquired = this.pool.acquire(route.endpoint);
    } catch {
      this.settle(gatewayError('SERVICE_UNAVAILABLE', 'the connection is closing; subscribe again'));
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
        next: (event) => this.enqueue(async () => {
          const result = await this.complete(event as FormattedExecutionResult);
          this.push(result);
        }),
        error: (err) => this.enqueue(() => this.settle(this.upstreamFailure(err, link))),
        complete: () => this.enqueue(() => this.settle()),
      },
    );
    shared.log.debug({ subgraph: route.endpoint.name, field: route.field }, 'subscription routed');
  }

  /** Runs `step` after every earlier event's step; a step that throws ends the subscription masked. */
  private enqueue(step: () => void | Promise<void>): void {
    this.pipeline = this.pipeline
      .then(() => (this.cancelled || this.finished ? undefined : step()))
      .catch((err: unknown) => this.settle(new GraphQLError('completing a subscription event failed', { originalError: err as Error })));
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
      context: { caller: this.pool.caller },
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

  private push(result: ExecutionResult): void {
    if (this.cancelled || this.finished) return;
    if (this.buffer.length >= this.shared.maxQueuedEvents) {
      // A slow consumer: its whole connection goes (close 1013), every stream resumes from its cursor.
      this.shared.log.warn({ field: this.route.field, queued: this.buffer.length }, 'slow subscriber closed');
      this.pool.closeClient(closeCodes.slowConsumer, `slow consumer: ${this.buffer.length} events queued; reconnect and resume from your last cursors`);
      void this.return();
      return;
    }
    this.buffer.push(result);
    this.notify();
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

  /** Ends the subscription once: buffered events are still delivered, then `failure` (if any). */
  private settle(failure?: Error): void {
    if (this.finished) return;
    this.finished = true;
    this.failure = failure;
    this.cleanUp();
    this.notify();
  }

  private cleanUp(): void {
    this.stopUpstream?.();
    this.stopUpstream = undefined;
    this.releaseLink?.();
    this.releaseLink = undefined;
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
