// Two throwaway subgraphs (no database) and a WebSocket client for the gateway's tests: `catalog`
// owns Product; `reviews` owns Review, adds Product.reviews and the `reviewAdded` subscription,
// whose events the test pushes through a Feed it holds.
import { composeServices } from '@apollo/composition';
import { buildFederatedSchema, startSubgraph, type SubgraphContext } from '@keelson/kit';
import { effectiveScopes, MeshError, type Caller, type Scope } from '@keelson/schema';
import { silentLogger, testSecurity, type Served } from '@keelson/service';
import type { AcceptedCredential, CredentialCheck } from '../src';
import { parse } from 'graphql';
import { createClient, type Client, type FormattedExecutionResult } from 'graphql-ws';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { Arg, Directive, Field, FieldResolver, ID, Int, ObjectType, Query, Resolver, Root, Subscription } from 'type-graphql';
import WebSocket from 'ws';

// ---- events the test controls ------------------------------------------------------------------

/** One subscriber's event stream inside the subgraph: the test pushes, the subgraph drains. */
export class Channel<T> implements AsyncIterableIterator<T> {
  private readonly queue: T[] = [];
  private wake: (() => void) | undefined;
  private ended = false;
  private failure: Error | undefined;
  /** How many times the subgraph's graphql-ws server called `return()` (the subscriber left). */
  returnCalls = 0;

  constructor(readonly args: Record<string, unknown>) {}

  get closed(): boolean {
    return this.ended;
  }

  push(value: T): void {
    this.queue.push(value);
    this.wake?.();
  }

  end(): void {
    this.ended = true;
    this.wake?.();
  }

  /** Ends the stream with `error` thrown from the subgraph's iterator (a failed read). */
  fail(error: Error): void {
    this.failure = error;
    this.end();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<T, undefined>> {
    for (;;) {
      const value = this.queue.shift();
      if (value !== undefined) return { done: false, value };
      if (this.failure) throw this.failure;
      if (this.ended) return { done: true, value: undefined };
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }

  async return(): Promise<IteratorResult<T, undefined>> {
    this.returnCalls += 1;
    this.end();
    return { done: true, value: undefined };
  }
}

/** Every channel the subgraph opened, in order, and a way to wait for the next one. */
export class Feed<T> {
  readonly channels: Channel<T>[] = [];
  private waiters: Array<() => void> = [];

  open(args: Record<string, unknown>): Channel<T> {
    const channel = new Channel<T>(args);
    this.channels.push(channel);
    for (const wake of this.waiters.splice(0)) wake();
    return channel;
  }

  /** Resolves with the `n`-th channel (1-based) once the subgraph has opened it. */
  async channel(n: number, timeoutMs = 5000): Promise<Channel<T>> {
    const deadline = Date.now() + timeoutMs;
    while (this.channels.length < n) {
      if (Date.now() > deadline) throw new Error(`the subgraph opened ${this.channels.length} channel(s), expected ${n}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
    return this.channels[n - 1]!;
  }
}

// ---- catalog ------------------------------------------------------------------------------------

@Directive('@key(fields: "id")')
@ObjectType('Product')
class CatalogProduct {
  @Field(() => ID) id!: string;
  @Field() name!: string;
  @Field(() => Int) price!: number;
}

export const products: CatalogProduct[] = [
  { id: 'p1', name: 'Keel', price: 120 },
  { id: 'p2', name: 'Rib', price: 45 },
];

@Resolver(() => CatalogProduct)
class CatalogResolver {
  @Query(() => [CatalogProduct])
  products(): CatalogProduct[] {
    return products;
  }

  @Query(() => CatalogProduct, { description: 'Always fails NOT_FOUND: a subgraph error code the gateway must keep.' })
  missingProduct(@Arg('id', () => ID) id: string): CatalogProduct {
    throw new MeshError('NOT_FOUND', `no product ${id}`, { id });
  }

  @Query(() => String, { description: 'Always fails with an internal error the client must never read.' })
  brokenField(): string {
    throw new Error('password=hunter2 leaked from a stack');
  }

  @Query(() => Int, { description: 'Counts its own executions, answering after `ms` and once `slowHold` is open: identical requests in flight overlap.' })
  async slowCount(@Arg('ms', () => Int) ms: number): Promise<number> {
    executions.slowStarted += 1;
    await Promise.all([new Promise((resolve) => setTimeout(resolve, ms)), slowHold.opened]);
    return ++executions.slowCount;
  }
}

/** How many times each counted catalog field ran (the gateway's in-flight deduplication is told by it). */
export const executions = { slowCount: 0, slowStarted: 0, productReferences: 0 };

/** Holds every `slowCount` answer until `open()`: a test keeps requests in flight for as long as it needs. */
export const slowHold = {
  opened: Promise.resolve() as Promise<void>,
  open: () => undefined as void,
  close(): void {
    this.opened = new Promise<void>((resolve) => (this.open = resolve));
  },
};

// ---- reviews ------------------------------------------------------------------------------------

@ObjectType()
export class Review {
  @Field(() => ID) id!: string;
  @Field() body!: string;
  productId!: string;
}

@Directive('@key(fields: "id")')
@ObjectType('Product')
class ReviewedProduct {
  @Field(() => ID) id!: string;
}

export interface ReviewsContext {
  feed: Feed<Review>;
}

const reviews: Review[] = [
  { id: 'r1', body: 'sturdy', productId: 'p1' },
  { id: 'r2', body: 'flexible', productId: 'p2' },
];

@Resolver(() => Review)
class ReviewResolver {
  @Query(() => [Review])
  reviews(): Review[] {
    return reviews;
  }

  @Subscription(() => Review, {
    description: 'Each review the test pushes; productId "forbidden" is refused with FORBIDDEN.',
    subscribe: ({ args, context }) => {
      if (args.productId === 'forbidden') throw new MeshError('FORBIDDEN', 'you may not watch this product');
      return (context as ReviewsContext).feed.open(args);
    },
  })
  reviewAdded(@Root() review: Review, @Arg('productId', () => ID, { nullable: true }) _productId?: string | null): Review {
    return review;
  }

  @FieldResolver(() => ReviewedProduct)
  product(@Root() review: Review): ReviewedProduct {
    return { id: review.productId };
  }
}

@Resolver(() => ReviewedProduct)
class ReviewedProductResolver {
  @FieldResolver(() => [Review])
  reviews(@Root() product: ReviewedProduct): Review[] {
    return reviews.filter((r) => r.productId === product.id);
  }
}

// ---- booting ------------------------------------------------------------------------------------

export interface Subgraphs {
  catalog: Served;
  reviews: Served;
  feed: Feed<Review>;
  supergraphSdl: string;
  /** WebSocket connections the reviews subgraph holds open right now. */
  reviewsSockets(): number;
  stop(): Promise<void>;
}

let built: Promise<{ catalog: Awaited<ReturnType<typeof buildFederatedSchema>>; reviews: Awaited<ReturnType<typeof buildFederatedSchema>>; supergraphSdl: string }> | undefined;

/** Both subgraph schemas and their composed supergraph (built once per test file). */
export function buildSchemas() {
  built ??= (async () => {
    const catalog = await buildFederatedSchema({
      resolvers: [CatalogResolver],
      referenceResolvers: {
        // p2 answers late, so a router that let a later event overtake an earlier one would show it.
        Product: {
          __resolveReference: async (ref: { id: string }) => {
            executions.productReferences += 1;
            if (ref.id === 'p2') await new Promise((resolve) => setTimeout(resolve, 60));
            return products.find((p) => p.id === ref.id) ?? null;
          },
        },
      },
    });
    const reviewsSchema = await buildFederatedSchema({
      resolvers: [ReviewResolver, ReviewedProductResolver],
      referenceResolvers: { Product: { __resolveReference: (ref: { id: string }) => ({ id: ref.id }) } },
    });
    const composed = composeServices([
      { name: 'catalog', url: 'http://127.0.0.1:1/graphql', typeDefs: parse(catalog.sdl) },
      { name: 'reviews', url: 'http://127.0.0.1:1/graphql', typeDefs: parse(reviewsSchema.sdl) },
    ]);
    if (composed.errors) throw new Error(`composition failed: ${composed.errors.map((e) => e.message).join('; ')}`);
    return { catalog, reviews: reviewsSchema, supergraphSdl: composed.supergraphSdl };
  })();
  return built;
}

/** Counts the WebSocket upgrades a server holds open. */
export function countSockets(served: Served): () => number {
  let open = 0;
  served.server.on('upgrade', (_req: IncomingMessage, socket: Duplex) => {
    open += 1;
    socket.once('close', () => (open -= 1));
  });
  return () => open;
}

// ---- authentication ------------------------------------------------------------------------------

/** What the gateway and both fixture subgraphs run under: authentication on, one assertion key. */
export const security = testSecurity();

/** The bearer values the test credential check accepts, by the scopes they grant. */
export const bearers = { admin: 'Bearer test-admin', otherAdmin: 'Bearer test-other-admin', reader: 'Bearer test-reader' } as const;

/**
 * A credential check of the gateway's own interface, standing in for the identity domain (which the
 * e2e tests use for real): `test-admin`, `test-other-admin` and `test-reader`, anything else refused.
 */
export class TestCredentials implements CredentialCheck {
  revoked = new Set<string>();
  private readonly listeners = new Set<(tokenId: string) => void>();

  async authenticate(authorization: string | undefined): Promise<AcceptedCredential> {
    const granted: Record<string, Scope[]> = { [bearers.admin]: ['admin'], [bearers.otherAdmin]: ['admin'], [bearers.reader]: ['read'] };
    const scopes = authorization ? granted[authorization] : undefined;
    const tokenId = authorization?.slice('Bearer '.length);
    if (!scopes || this.revoked.has(tokenId!)) throw new MeshError('UNAUTHENTICATED', 'authentication required');
    const caller: Caller = { subject: `token:${tokenId}`, kind: 'token', scopes: effectiveScopes(scopes), tokenId };
    return { caller };
  }

  async live(tokenIds: readonly string[]): Promise<Set<string>> {
    return new Set(tokenIds.filter((id) => !this.revoked.has(id)));
  }

  onRevoked(listener: (tokenId: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  revoke(tokenId: string): void {
    this.revoked.add(tokenId);
    for (const l of this.listeners) l(tokenId);
  }
}

/** Starts the reviews subgraph alone (tests that kill it mid-stream need one of their own; `port` to bring one back). */
export async function startReviews(feed: Feed<Review>, port = 0): Promise<Served> {
  const schemas = await buildSchemas();
  return startSubgraph<SubgraphContext & ReviewsContext>({
    name: 'reviews',
    schema: schemas.reviews.schema,
    host: '127.0.0.1',
    port,
    security,
    log: silentLogger(),
    context: (base) => ({ ...base, feed }),
  });
}

/** Starts both subgraphs on free ports. */
export async function startSubgraphs(): Promise<Subgraphs> {
  const schemas = await buildSchemas();
  const feed = new Feed<Review>();
  const catalog = await startSubgraph({ name: 'catalog', schema: schemas.catalog.schema, host: '127.0.0.1', port: 0, security, log: silentLogger(), context: (base) => base });
  const reviews = await startReviews(feed);
  return {
    catalog,
    reviews,
    feed,
    supergraphSdl: schemas.supergraphSdl,
    reviewsSockets: countSockets(reviews),
    async stop() {
      await Promise.all([catalog.stop(), reviews.stop()]);
    },
  };
}

// ---- a client -----------------------------------------------------------------------------------

/** What one subscription received, in order; `settled` resolves on complete or error. */
export interface Received {
  events: FormattedExecutionResult<Record<string, unknown>, unknown>[];
  errors: unknown;
  completed: boolean;
  settled: Promise<void>;
  /** Resolves once `n` events arrived. */
  waitFor(n: number, timeoutMs?: number): Promise<FormattedExecutionResult<Record<string, unknown>, unknown>[]>;
  unsubscribe(): void;
}

/** A graphql-ws client of the gateway, authenticated as `authorization` (admin by default). */
export function wsClient(url: string, authorization: string | null = bearers.admin): Client {
  return createClient({ url, webSocketImpl: WebSocket, lazy: true, retryAttempts: 0, connectionParams: authorization ? { authorization } : {} });
}

export function subscribe(client: Client, query: string, variables?: Record<string, unknown>, operationName?: string): Received {
  let settle!: () => void;
  const settled = new Promise<void>((resolve) => (settle = resolve));
  const listeners = new Set<() => void>();
  const received: Received = {
    events: [],
    errors: undefined,
    completed: false,
    settled,
    async waitFor(n, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (received.events.length < n) {
        if (received.errors !== undefined || received.completed) {
          throw new Error(`ended after ${received.events.length} event(s): ${JSON.stringify(received.errors ?? 'complete')}`);
        }
        if (Date.now() > deadline) throw new Error(`received ${received.events.length} event(s), expected ${n}`);
        await new Promise<void>((resolve) => {
          listeners.add(resolve);
          setTimeout(resolve, 50);
        });
      }
      return received.events.slice(0, n);
    },
    unsubscribe: () => undefined,
  };
  const notify = () => {
    for (const l of listeners) l();
    listeners.clear();
  };
  received.unsubscribe = client.subscribe(
    { query, variables, operationName },
    {
      next: (value) => {
        received.events.push(value);
        notify();
      },
      error: (err) => {
        received.errors = err;
        notify();
        settle();
      },
      complete: () => {
        received.completed = true;
        notify();
        settle();
      },
    },
  );
  return received;
}

/** Polls `check` until it is true. */
export async function eventually(check: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Reviews of one product (`$productId`), owned by the reviews subgraph. */
export const REVIEW_ADDED = 'subscription Added($productId: ID) { reviewAdded(productId: $productId) { id body } }';
/** The same with fields of the catalog subgraph, completed per event. */
export const REVIEW_ADDED_WITH_PRODUCT = 'subscription { reviewAdded { id body product { name price } } }';

export function review(n: number, productId = 'p1'): Review {
  return { id: `r${n}`, body: `review ${n}`, productId };
}

/** After each test of a file on one gateway: its clients disposed, and the gateway seen closing every upstream socket. */
export async function disposeClients(clients: Client[], subgraphs: Subgraphs): Promise<void> {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  await eventually(() => subgraphs.reviewsSockets() === 0, 'the gateway closed every upstream socket');
}

/** After a file: its gateway, then its subgraphs, stopped (either may not have started). */
export async function stopGatewayAndSubgraphs(gateway: { stop(): Promise<void> } | undefined, subgraphs: Subgraphs | undefined): Promise<void> {
  await gateway?.stop();
  await subgraphs?.stop();
}
