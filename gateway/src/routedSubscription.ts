import { closeCodes } from '@keelson/schema';
import type { ExecutionResult } from 'graphql';
import { gatewayError } from './errors';
import { joinFeed, type FeedMember, type Route, type Shared, type UpstreamFeed } from './upstreamFeed';
import type { UpstreamPool } from './upstreamPool';

export type { Route, Shared } from './upstreamFeed';

/** What `onSubscribe` hands to `subscribe` through graphql-ws's execution args. */
export interface RouteContext {
  route: Route;
  pool: UpstreamPool;
  /** The graph's parts the subscription was planned with (kept across reloads). */
  shared: Shared;
}

/**
 * One accepted subscription routed to its owning subgraph: an async iterator the graphql-ws server
 * drains. On the first `next()` it joins a feed (an upstream subscription shared with identical
 * subscriptions of the same caller, see `joinFeed`); completed events are buffered in arrival order;
 * `return()` — the client completed or disconnected — leaves the feed at once, and the last member
 * to leave cancels upstream wherever its handshake stands.
 */
export class RoutedSubscription implements AsyncIterableIterator<ExecutionResult, undefined>, FeedMember {
  private readonly buffer: ExecutionResult[] = [];
  private failure: Error | undefined;
  /** Nothing more will be buffered: the upstream completed or failed. */
  private finished = false;
  /** The consumer left (`return()`): nothing more will be delivered. */
  private cancelled = false;
  private started = false;
  private wake: (() => void) | undefined;
  private feed: UpstreamFeed | undefined;

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
    this.leave();
    this.notify();
    return { done: true, value: undefined };
  }

  async throw(err: unknown): Promise<IteratorResult<ExecutionResult, undefined>> {
    await this.return();
    throw err;
  }

  deliver(result: ExecutionResult): void {
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

  /** Ends the subscription once: buffered events are still delivered, then `failure` (if any). */
  end(failure?: Error): void {
    if (this.finished) return;
    this.finished = true;
    this.failure = failure;
    this.feed = undefined;
    this.notify();
  }

  private start(): void {
    this.started = true;
    if (this.pool.isClosed) {
      this.end(gatewayError('SERVICE_UNAVAILABLE', 'the connection is closing; subscribe again'));
      return;
    }
    const feed = joinFeed(this.route, this.pool, this.shared, this);
    // The feed may have ended already (its upstream link could not be had).
    if (!this.finished) this.feed = feed;
  }

  private leave(): void {
    const feed = this.feed;
    this.feed = undefined;
    feed?.leave(this);
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
