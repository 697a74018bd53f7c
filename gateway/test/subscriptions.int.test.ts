import { createServer, type AddressInfo } from 'node:net';
import { MeshError } from '@keelson/schema';
import { freePort, silentLogger } from '@keelson/service';
import type { Client } from 'graphql-ws';
import WebSocket, { WebSocketServer } from 'ws';
import { startGateway, type RunningGateway } from '../src';
import { buildSchemas, eventually, Feed, review, REVIEW_ADDED, REVIEW_ADDED_WITH_PRODUCT, startReviews, startSubgraphs, subscribe, wsClient, type Review, type Subgraphs, security, TestCredentials, bearers, disposeClients, stopGatewayAndSubgraphs } from './fixtures';

const credentials = new TestCredentials();

describe('subscriptions through the gateway', () => {
  let subgraphs: Subgraphs;
  let gateway: RunningGateway;
  const clients: Client[] = [];

  /** A client of the gateway, disposed after the file. */
  const client = (): Client => {
    const c = wsClient(gateway.wsUrl);
    clients.push(c);
    return c;
  };
  /** The next channel the reviews subgraph opens. */
  const nextChannel = () => subgraphs.feed.channel(subgraphs.feed.channels.length + 1);

  beforeAll(async () => {
    subgraphs = await startSubgraphs();
    gateway = await startGateway({ security, credentials, supergraphSdl: subgraphs.supergraphSdl,
      port: 0,
      subgraphUrls: { catalog: subgraphs.catalog.url, reviews: subgraphs.reviews.url },
      log: silentLogger(),
    });
  });

  afterEach(() => disposeClients(clients, subgraphs));
  afterAll(() => stopGatewayAndSubgraphs(gateway, subgraphs));

  it('delivers the owning subgraph\'s events in order, forwarding the variables', async () => {
    const received = subscribe(client(), REVIEW_ADDED, { productId: 'p1' });
    const channel = await nextChannel();
    for (let n = 1; n <= 5; n += 1) channel.push(review(n));

    const events = await received.waitFor(5);

    expect(channel.args).toEqual({ productId: 'p1' });
    expect(events).toEqual([1, 2, 3, 4, 5].map((n) => ({ data: { reviewAdded: { id: `r${n}`, body: `review ${n}` } } })));
  });

  it('completes each event with fields another subgraph owns, in order, fetched per event', async () => {
    const received = subscribe(client(), REVIEW_ADDED_WITH_PRODUCT);
    const channel = await nextChannel();
    channel.push(review(1, 'p2'));
    channel.push(review(2, 'p1'));
    channel.push(review(3, 'p404'));

    const events = await received.waitFor(3);

    expect(events[0]).toEqual({ data: { reviewAdded: { id: 'r1', body: 'review 1', product: { name: 'Rib', price: 45 } } } });
    expect(events[1]).toEqual({ data: { reviewAdded: { id: 'r2', body: 'review 2', product: { name: 'Keel', price: 120 } } } });
    // catalog knows no p404: its non-null name is missing, which nulls the event, masked as internal.
    expect(events[2]).toEqual({
      data: null,
      errors: [{ message: 'Internal server error', path: ['reviewAdded', 'product', 'name'], extensions: { code: 'INTERNAL_SERVER_ERROR', status: 500 } }],
    });
  });

  it('relays the subgraph completing the stream as complete', async () => {
    const received = subscribe(client(), REVIEW_ADDED);
    const channel = await nextChannel();
    channel.push(review(1));
    channel.end();

    await received.settled;

    expect(received.events).toHaveLength(1);
    expect(received.completed).toBe(true);
    expect(received.errors).toBeUndefined();
  });

  it('relays the subgraph failing mid-stream as error, with its code kept', async () => {
    const received = subscribe(client(), REVIEW_ADDED);
    const channel = await nextChannel();
    channel.push(review(1));
    channel.fail(new MeshError('CONFLICT', 'the stream was reset'));

    await received.settled;

    expect(received.events).toHaveLength(1);
    expect(received.completed).toBe(false);
    expect(received.errors).toEqual([{ message: 'the stream was reset', extensions: { code: 'CONFLICT', status: 409 } }]);
  });

  it('relays an internal failure mid-stream masked', async () => {
    const received = subscribe(client(), REVIEW_ADDED);
    const channel = await nextChannel();
    channel.fail(new Error('relation "events" does not exist'));

    await received.settled;

    expect(received.errors).toEqual([{ message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR', status: 500 } }]);
  });

  it('cancels upstream when the client completes: the subgraph\'s iterator return() runs', async () => {
    const received = subscribe(client(), REVIEW_ADDED);
    const channel = await nextChannel();
    channel.push(review(1));
    await received.waitFor(1);

    received.unsubscribe();

    await eventually(() => channel.returnCalls === 1, 'the subgraph iterator was returned');
    await eventually(() => subgraphs.reviewsSockets() === 0, 'the upstream socket closed');
  });

  it('cancels upstream when the client disconnects', async () => {
    const c = wsClient(gateway.wsUrl);
    subscribe(c, REVIEW_ADDED);
    const first = await nextChannel();
    subscribe(c, REVIEW_ADDED_WITH_PRODUCT);
    const second = await nextChannel();

    await c.dispose();

    await eventually(() => first.returnCalls === 1 && second.returnCalls === 1, 'both subgraph iterators were returned');
    await eventually(() => subgraphs.reviewsSockets() === 0, 'the upstream socket closed');
  });

  it('shares one upstream socket per caller and subgraph', async () => {
    // Different variables: two streams, each its own upstream subscription (identical ones share one, see subscriptionFeeds).
    const a = client();
    subscribe(a, REVIEW_ADDED, { productId: 'p1' });
    await nextChannel();
    subscribe(a, REVIEW_ADDED, { productId: 'p2' });
    await nextChannel();
    expect(subgraphs.reviewsSockets()).toBe(1);

    // Across connections of the same caller too (see subscriptionLinks); another caller has its own.
    subscribe(client(), REVIEW_ADDED, { productId: 'p3' });
    await nextChannel();
    expect(subgraphs.reviewsSockets()).toBe(1);
    const other = wsClient(gateway.wsUrl, bearers.otherAdmin);
    clients.push(other);
    subscribe(other, REVIEW_ADDED, { productId: 'p4' });
    await nextChannel();
    expect(subgraphs.reviewsSockets()).toBe(2);
  });

  describe('rejects, with an error message and a code, before anything reaches a subgraph', () => {
    const cases: Array<[string, string, Record<string, unknown> | undefined, string, RegExp]> = [
      ['a field the schema lacks', 'subscription { reviewAdded { id rating } }', undefined, 'GRAPHQL_VALIDATION_FAILED', /Cannot query field "rating" on type "Review"/],
      ['two root fields', 'subscription { a: reviewAdded { id } b: reviewAdded { id } }', undefined, 'GRAPHQL_VALIDATION_FAILED', /must select only one top level field/],
      ['a syntax error', 'subscription { reviewAdded { id }', undefined, 'GRAPHQL_PARSE_FAILED', /Syntax Error/],
      ['a query (served over HTTP)', '{ products { id } }', undefined, 'BAD_REQUEST', /WebSocket serves subscriptions only; send this query over HTTP POST/],
      ['an operationName the document lacks', 'subscription A { reviewAdded { id } } subscription B { reviewAdded { body } }', undefined, 'BAD_REQUEST', /the document has no operation named "C"/],
      ['a variable of the wrong type', REVIEW_ADDED, { productId: { nested: true } }, 'BAD_USER_INPUT', /Variable "\$productId" got invalid value/],
      [
        'a selection deeper than the limit',
        'subscription { reviewAdded { product { reviews { product { reviews { product { reviews { product { reviews { product { reviews { product { id } } } } } } } } } } } } }',
        undefined,
        'GRAPHQL_VALIDATION_FAILED',
        /^Syntax Error: Query depth limit of 12 exceeded, found 13\.$/,
      ],
    ];

    it.each(cases)('%s', async (name, query, variables, code, message) => {
      const opened = subgraphs.feed.channels.length;
      const received = subscribe(client(), query, variables, name.startsWith('an operationName') ? 'C' : undefined);

      await received.settled;

      expect(received.events).toEqual([]);
      expect(received.errors).toEqual([expect.objectContaining({ message: expect.stringMatching(message), extensions: expect.objectContaining({ code, status: 400 }) })]);
      expect(subgraphs.feed.channels.length).toBe(opened);
    });
  });

  it('closes a connection that sends a message over 1 MiB (1009)', async () => {
    // graphql-ws's useServer reports every socket error on console.error, this one included.
    const consoleError = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    const socket = new WebSocket(gateway.wsUrl, 'graphql-transport-ws');
    const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
    await new Promise((resolve) => socket.once('open', resolve));

    socket.send(JSON.stringify({ type: 'connection_init', payload: { padding: 'x'.repeat(1024 * 1024) } }));

    await expect(closed).resolves.toBe(1009);
    expect(consoleError).toHaveBeenCalledWith(expect.stringMatching(/^Internal error emitted on a WebSocket socket/), expect.objectContaining({ message: 'Max payload size exceeded' }));
    consoleError.mockRestore();
  });

  it('relays a subgraph refusing the subscription with its code and status', async () => {
    const received = subscribe(client(), REVIEW_ADDED, { productId: 'forbidden' });

    await received.settled;

    expect(received.events).toEqual([
      {
        data: null,
        errors: [expect.objectContaining({ message: 'you may not watch this product', extensions: { code: 'FORBIDDEN', status: 403 } })],
      },
    ]);
    expect(received.completed).toBe(true);
  });
});

describe('subscriptions when a subgraph or a client fails', () => {
  const log = silentLogger();


  it('answers SERVICE_UNAVAILABLE (503) when the owning subgraph cannot be reached', async () => {
    const { supergraphSdl } = await buildSchemas();
    const down = `http://127.0.0.1:${await freePort()}/graphql`;
    const gateway = await startGateway({ security, credentials, supergraphSdl, port: 0, subgraphUrls: { catalog: down, reviews: down }, log });
    const c = wsClient(gateway.wsUrl);
    try {
      const received = subscribe(c, REVIEW_ADDED);
      await received.settled;

      expect(received.errors).toEqual([
        {
          message: 'subscription reviewAdded failed: subgraph "reviews" is unreachable; retry shortly',
          extensions: { code: 'SERVICE_UNAVAILABLE', status: 503, subgraph: 'reviews' },
        },
      ]);
    } finally {
      await c.dispose();
      await gateway.stop();
    }
  });

  it('keeps a subscription going when the per-event fetch from another subgraph fails, with the error in the event', async () => {
    const { supergraphSdl } = await buildSchemas();
    const feed = new Feed<Review>();
    const reviews = await startReviews(feed);
    const down = `http://127.0.0.1:${await freePort()}/graphql`;
    const gateway = await startGateway({ security, credentials, supergraphSdl, port: 0, subgraphUrls: { catalog: down, reviews: reviews.url }, log });
    const c = wsClient(gateway.wsUrl);
    try {
      const received = subscribe(c, REVIEW_ADDED_WITH_PRODUCT);
      const channel = await feed.channel(1);
      channel.push(review(1));
      channel.push(review(2));

      const events = await received.waitFor(2);

      for (const event of events) {
        expect(event).toEqual({
          data: null,
          errors: [expect.objectContaining({ message: 'subgraph "catalog" is unreachable; retry shortly', extensions: { code: 'SERVICE_UNAVAILABLE', status: 503 } })],
        });
      }
      expect(received.errors).toBeUndefined();
      expect(received.completed).toBe(false);
    } finally {
      await c.dispose();
      await gateway.stop();
      await reviews.stop();
    }
  });

  it('delivers what arrived, then SERVICE_UNAVAILABLE, when the subgraph dies mid-stream', async () => {
    const { supergraphSdl } = await buildSchemas();
    const feed = new Feed<Review>();
    const reviews = await startReviews(feed);
    const gateway = await startGateway({ security, credentials, supergraphSdl, port: 0, subgraphUrls: { catalog: reviews.url, reviews: reviews.url }, log });
    const c = wsClient(gateway.wsUrl);
    try {
      const received = subscribe(c, REVIEW_ADDED);
      const channel = await feed.channel(1);
      channel.push(review(1));
      channel.push(review(2));
      await received.waitFor(2);

      await reviews.stop();
      await received.settled;

      expect(received.events).toHaveLength(2);
      expect(received.errors).toEqual([
        {
          message: 'subscription reviewAdded ended: the connection to subgraph "reviews" was lost (close 1001: Going away); resubscribe from the last cursor it saw',
          extensions: { code: 'SERVICE_UNAVAILABLE', status: 503, subgraph: 'reviews' },
        },
      ]);
    } finally {
      await c.dispose();
      await gateway.stop();
      await reviews.stop();
    }
  });

  describe('a client that leaves while the upstream handshake is pending', () => {
    // A subgraph that accepts the WebSocket but never acknowledges graphql-ws's connection_init.
    let silent: WebSocketServer;
    let sockets: Array<{ socket: WebSocket; closed: Promise<number> }>;
    let gateway: RunningGateway;

    beforeEach(async () => {
      sockets = [];
      silent = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: () => 'graphql-transport-ws' });
      silent.on('connection', (socket) => {
        sockets.push({ socket, closed: new Promise((resolve) => socket.once('close', (code) => resolve(code))) });
      });
      await new Promise<void>((resolve) => silent.once('listening', () => resolve()));
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/graphql`;
      const { supergraphSdl } = await buildSchemas();
      gateway = await startGateway({ security, credentials, supergraphSdl, port: 0, subgraphUrls: { catalog: url, reviews: url }, log });
    });

    afterEach(async () => {
      await gateway.stop();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    });

    it('closes the half-open upstream socket at once when the client completes', async () => {
      const c = wsClient(gateway.wsUrl);
      try {
        const received = subscribe(c, REVIEW_ADDED);
        await eventually(() => sockets.length === 1, 'the gateway opened an upstream socket');

        const started = Date.now();
        received.unsubscribe();

        await expect(sockets[0]!.closed).resolves.toBe(4499);
        expect(Date.now() - started).toBeLessThan(1000);
      } finally {
        await c.dispose();
      }
    });

    it('closes the half-open upstream socket at once when the client disconnects', async () => {
      const c = wsClient(gateway.wsUrl);
      subscribe(c, REVIEW_ADDED);
      await eventually(() => sockets.length === 1, 'the gateway opened an upstream socket');

      const started = Date.now();
      await c.dispose();

      await expect(sockets[0]!.closed).resolves.toBe(4499);
      expect(Date.now() - started).toBeLessThan(1000);
    });
  });

  it('closes the socket of a client that reads too slowly with 1013 (slow consumer), after delivering in order what it could', async () => {
    const subgraphs = await startSubgraphs();
    const gateway = await startGateway({ security, credentials, supergraphSdl: subgraphs.supergraphSdl,
      port: 0,
      subgraphUrls: { catalog: subgraphs.catalog.url, reviews: subgraphs.reviews.url },
      subscriptions: { maxQueuedEvents: 10 },
      log,
    });
    // A bare graphql-transport-ws client, so the test can stop reading from its TCP socket.
    const socket = new WebSocket(gateway.wsUrl, 'graphql-transport-ws');
    const messages: Array<{ type: string; id?: string; payload?: unknown }> = [];
    socket.on('message', (data) => messages.push(JSON.parse(String(data))));
    const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: String(reason) })));
    try {
      await new Promise((resolve) => socket.once('open', resolve));
      socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: bearers.admin } }));
      await eventually(() => messages.some((m) => m.type === 'connection_ack'), 'connection_ack');
      socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: REVIEW_ADDED } }));
      const channel = await subgraphs.feed.channel(1);

      socket.pause();
      const body = 'x'.repeat(64 * 1024);
      for (let n = 1; n <= 400; n += 1) channel.push({ id: `r${n}`, body, productId: 'p1' });
      await eventually(() => channel.returnCalls === 1, 'the gateway gave up on the slow client and cancelled upstream', 10_000);
      socket.resume();

      expect(await closed).toEqual({ code: 1013, reason: 'slow consumer: 10 events queued; reconnect and resume from your last cursors' });
      const delivered = messages.filter((m) => m.type === 'next');
      expect(delivered.length).toBeLessThan(400);
      expect(delivered.map((m) => (m.payload as { data: { reviewAdded: { id: string } } }).data.reviewAdded.id)).toEqual(
        delivered.map((_, i) => `r${i + 1}`),
      );
      // Nothing pretends the stream ended: no `complete`, no `error` — the socket closed.
      expect(messages.filter((m) => m.type === 'complete' || m.type === 'error')).toEqual([]);
    } finally {
      socket.terminate();
      await gateway.stop();
      await subgraphs.stop();
    }
  });

  it('abandons an upstream whose HTTP upgrade hangs when the client leaves, without crashing', async () => {
    // Accepts TCP, never answers the upgrade request.
    const connections: Array<{ closed: Promise<void> }> = [];
    const mute = createServer((socket) => {
      socket.resume(); // read (and ignore) the upgrade request, so the peer's FIN is seen
      connections.push({ closed: new Promise((resolve) => socket.once('close', () => resolve())) });
    });
    await new Promise<void>((resolve) => mute.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(mute.address() as AddressInfo).port}/graphql`;
    const { supergraphSdl } = await buildSchemas();
    const gateway = await startGateway({ security, credentials, supergraphSdl, port: 0, subgraphUrls: { catalog: url, reviews: url }, log });
    const c = wsClient(gateway.wsUrl);
    try {
      const received = subscribe(c, REVIEW_ADDED);
      await eventually(() => connections.length === 1, 'the gateway connected upstream');

      received.unsubscribe();

      // The hung upgrade is abandoned: the gateway closes its side of the upstream socket…
      await connections[0]!.closed;
      // …and lives on: a new client is acknowledged and its subscription goes upstream again.
      const d = wsClient(gateway.wsUrl);
      try {
        const again = subscribe(d, REVIEW_ADDED);
        await eventually(() => connections.length === 2, 'the gateway connected upstream for the next client');
        expect(again.errors).toBeUndefined();
        again.unsubscribe();
        await connections[1]!.closed;
      } finally {
        await d.dispose();
      }
    } finally {
      await c.dispose();
      await gateway.stop();
      await new Promise<void>((resolve) => mute.close(() => resolve()));
    }
  });

  it('closes every client socket (1001) and every upstream socket when the gateway stops', async () => {
    const subgraphs = await startSubgraphs();
    const gateway = await startGateway({ security, credentials, supergraphSdl: subgraphs.supergraphSdl,
      port: 0,
      subgraphUrls: { catalog: subgraphs.catalog.url, reviews: subgraphs.reviews.url },
      log,
    });
    const c = wsClient(gateway.wsUrl);
    try {
      const received = subscribe(c, REVIEW_ADDED);
      const channel = await subgraphs.feed.channel(1);
      expect(subgraphs.reviewsSockets()).toBe(1);

      await gateway.stop();

      await eventually(() => subgraphs.reviewsSockets() === 0 && channel.returnCalls === 1, 'the upstream closed');
      await received.settled;
      // The client reads "going away" (1001), not a `complete` of a stream that did not end.
      expect(received.completed).toBe(false);
      expect(received.errors).toMatchObject({ code: 1001 });
    } finally {
      await c.dispose();
      await subgraphs.stop();
    }
  });
});
