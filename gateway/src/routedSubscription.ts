import { closeCodes } from '@keelson/schema';
import type { ExecutionResult } from 'graphql';
import type { WebSocket } from 'ws';
import { gatewayError } from './errors';
import { joinFeed, type FeedMember, type Route, type Shared, type UpstreamFeed } from './upstreamFeed';
import type { ConnectionLinks } from './upstreamPool';

export type { Route, Shared } from './upstreamFeed';

/** Where one subscription's `next` messages go: the client's socket (closed when it reads too slowly) and its operation id. */
export interface ClientStream {
  socket: Pick<WebSocket, 'send' | 'close'>;
  id: string;
}

/** What `onSubscribe` hands to `subscribe` through graphql-ws's execution args. */
export interface RouteContext {
  route: Route;
  /** The client connection's way to its caller's upstream links. */
  links: ConnectionLinks;
  /** The graph's parts the subscription was planned with (kept across reloads). */
  shared: Shared;
  client: ClientStream;
}

/**
 * One accepted subscription routed to its owning subgraph, as the async iterator the graphql-ws
 * server drains for its end. On the first `next()` it joins a feed (an upstream subscription shared
 * with identical subscriptions of the same caller, see `joinFeed`). Each completed event is written
 * to the client's socket as a graphql-ws `next` message at once, around the payload the feed
 * serialized once for all its members; the iterator yields nothing and ends when the feed does
 * (graphql-ws then sends `complete`, or `error` with the failure), after every event written.
 * `return()` — the client completed or disconnected — leaves the feed at once, and the last member
 * to leave cancels upstream wherever its handshake stands.
 */
export class RoutedSubscription implements AsyncIterableIterator<ExecutionResult, undefined>, FeedMember {
  /** Events written to the socket and not yet flushed to it (a slow reader's backlog). */
  private unflushed = 0;
  private failure: Error | undefined;
  /** Nothing more will be written: the upstream completed or failed. */
  private finished = false;
  /** The consumer left (`return()`): nothing more will be delivered. */
  private cancelled = false;
  private started = false;
  private wake: (() => void) | undefined;
  private feed: UpstreamFeed | undefined;

  constructor(
    private readonly route: Route,
    private readonly links: ConnectionLinks,
    private readonly shared: Shared,
    private readonly client: ClientStream,
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<ExecutionResult, undefined>> {
    if (!this.started) this.start();
    for (;;) {
      if (this.cancelled) return { done: true, value: undefined };
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
    this.leave();
    this.notify();
    return { done: true, value: undefined };
  }

  async throw(err: unknown): Promise<IteratorResult<ExecutionResult, undefined>> {
    await this.return();
    throw err;
  }

  deliver(payloadJson: string): void {
    if (this.cancelled || this.finished) return;
    if (this.unflushed >= this.shared.maxQueuedEvents) {
      // A slow consumer: its whole connection goes (close 1013), every stream resumes from its cursor;
      // the feed and the link it shares with other connections go on for them.
      this.shared.log.warn({ field: this.route.field, queued: this.unflushed }, 'slow subscriber closed');
      this.client.socket.close(closeCodes.slowConsumer, `slow consumer: ${this.unflushed} events queued; reconnect and resume from your last cursors`);
      void this.return();
      return;
    }
    this.unflushed += 1;
    // graphql-ws's `next` message, byte for byte as its server would stringify it.
    this.client.socket.send(`{"id":${JSON.stringify(this.client.id)},"type":"next","payload":${payloadJson}}`, this.flushed);
  }

  /** The socket took one written event (or failed to: a closing socket is not a slow one). */
  private readonly flushed = (): void => {
    this.unflushed -= 1;
  };

  /** Ends the subscription once: after the events already written, `failure` (if any) or `complete`. */
  end(failure?: Error): void {
    if (this.finished) return;
    this.finished = true;
    this.failure = failure;
    this.feed = undefined;
    this.notify();
  }

  private start(): void {
    this.started = true;
    if (this.links.isClosed) {
      this.end(gatewayError('SERVICE_UNAVAILABLE', 'the connection is closing; subscribe again'));
      return;
    }
    const feed = joinFeed(this.route, this.links, this.shared, this);
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
