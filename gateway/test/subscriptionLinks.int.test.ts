import { silentLogger } from '@keelson/service';
import type { Client } from 'graphql-ws';
import WebSocket from 'ws';
import { startGateway, type RunningGateway } from '../src';
import { bearers, buildSchemas, countSockets, eventually, Feed, review, REVIEW_ADDED, security, startReviews, startSubgraphs, subscribe, TestCredentials, wsClient, type Review, type Subgraphs, disposeClients, stopGatewayAndSubgraphs } from './fixtures';

// The client connections of one caller share one upstream socket (a link) per subgraph: schema/PROTOCOL.md,
// "Gateway subscription routing", rule 5. Sharing the socket shares nothing else: each connection's
// subscriptions, slowness and departure stay its own; a lost link reaches every subscription on it.

const credentials = new TestCredentials();
const log = silentLogger();

describe('upstream links shared by the client connections of one caller', () => {
  let subgraphs: Subgraphs;
  let gateway: RunningGateway;
  const clients: Client[] = [];
  const client = (authorization: string = bearers.admin): Client => clients[clients.push(wsClient(gateway.wsUrl, authorization)) - 1]!;
  const nextChannel = () => subgraphs.feed.channel(subgraphs.feed.channels.length + 1);

  beforeAll(async () => {
    subgraphs = await startSubgraphs();
    const subgraphUrls = { catalog: subgraphs.catalog.url, reviews: subgraphs.reviews.url };
    gateway = await startGateway({ security, credentials, supergraphSdl: subgraphs.supergraphSdl, port: 0, subgraphUrls, subscriptions: { maxQueuedEvents: 10 }, log });
  });

  afterEach(() => disposeClients(clients, subgraphs));
  afterAll(() => stopGatewayAndSubgraphs(gateway, subgraphs));

  it('carry the subscriptions of two connections of one caller over one upstream socket', async () => {
    const [a, b] = [client(), client()];
    const fromA = subscribe(a, REVIEW_ADDED, { productId: 'p1' });
    const ofA = await nextChannel();
    const fromB = subscribe(b, REVIEW_ADDED, { productId: 'p2' });
    const ofB = await nextChannel();

    expect(subgraphs.reviewsSockets()).toBe(1);
    ofA.push(review(1));
    ofB.push(review(2, 'p2'));
    expect(await fromA.waitFor(1)).toEqual([{ data: { reviewAdded: { id: 'r1', body: 'review 1' } } }]);
    expect(await fromB.waitFor(1)).toEqual([{ data: { reviewAdded: { id: 'r2', body: 'review 2' } } }]);
  });

  it('never carry two callers over one socket, even with the same scopes', async () => {
    subscribe(client(bearers.admin), REVIEW_ADDED, { productId: 'p1' });
    await nextChannel();
    subscribe(client(bearers.otherAdmin), REVIEW_ADDED, { productId: 'p2' });
    await nextChannel();
    subscribe(client(bearers.admin), REVIEW_ADDED, { productId: 'p3' });
    await nextChannel();

    expect(subgraphs.reviewsSockets()).toBe(2);
  });

  it('keep the other connection\'s subscriptions when one connection leaves, and close with the last', async () => {
    const a = wsClient(gateway.wsUrl);
    const b = client();
    subscribe(a, REVIEW_ADDED, { productId: 'p1' });
    const ofA = await nextChannel();
    const fromB = subscribe(b, REVIEW_ADDED, { productId: 'p2' });
    const ofB = await nextChannel();

    await a.dispose();

    await eventually(() => ofA.returnCalls === 1, 'the subscription of the connection that left was cancelled upstream');
    ofB.push(review(1, 'p2'));
    expect(await fromB.waitFor(1)).toEqual([{ data: { reviewAdded: { id: 'r1', body: 'review 1' } } }]);
    expect(ofB.returnCalls).toBe(0);
    expect(subgraphs.reviewsSockets()).toBe(1);

    fromB.unsubscribe();
    await eventually(() => ofB.returnCalls === 1 && subgraphs.reviewsSockets() === 0, 'the link closed with its last subscription');
  });

  it('close only the slow connection (1013); the other reads every event of the stream they share', async () => {
    // A bare graphql-transport-ws client, so the test can stop reading from its TCP socket.
    const slow = new WebSocket(gateway.wsUrl, 'graphql-transport-ws');
    const messages: Array<{ type: string }> = [];
    slow.on('message', (data) => messages.push(JSON.parse(String(data))));
    const closed = new Promise<number>((resolve) => slow.once('close', (code) => resolve(code)));
    try {
      await new Promise((resolve) => slow.once('open', resolve));
      slow.send(JSON.stringify({ type: 'connection_init', payload: { authorization: bearers.admin } }));
      await eventually(() => messages.some((m) => m.type === 'connection_ack'), 'connection_ack');
      slow.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: REVIEW_ADDED, variables: { productId: 'p1' } } }));
      const channel = await nextChannel();
      const b = client();
      const fromB = subscribe(b, REVIEW_ADDED, { productId: 'p1' });
      // A later subscription of b reaching the subgraph says b's first one joined the stream.
      const fromBOther = subscribe(b, REVIEW_ADDED, { productId: 'p2' });
      const other = await nextChannel();
      expect(subgraphs.reviewsSockets()).toBe(1);

      slow.pause();
      const body = 'x'.repeat(64 * 1024);
      for (let n = 1; n <= 400; n += 1) channel.push({ id: `r${n}`, body, productId: 'p1' });
      const events = await fromB.waitFor(400, 20_000);
      slow.resume();

      expect(await closed).toBe(1013);
      expect(events.map((e) => (e.data as { reviewAdded: { id: string } }).reviewAdded.id)).toEqual(Array.from({ length: 400 }, (_, i) => `r${i + 1}`));
      channel.push(review(401));
      other.push(review(1, 'p2'));
      await fromB.waitFor(401);
      expect(await fromBOther.waitFor(1)).toEqual([{ data: { reviewAdded: { id: 'r1', body: 'review 1' } } }]);
      expect(channel.returnCalls).toBe(0);
      expect(subgraphs.reviewsSockets()).toBe(1);
    } finally {
      slow.terminate();
    }
  });
});

describe('a lost link shared by two connections', () => {
  it('ends the subscriptions of both with SERVICE_UNAVAILABLE, and both resume over a new link', async () => {
    const feed = new Feed<Review>();
    let reviews = await startReviews(feed);
    const port = reviews.port;
    const gateway = await startGateway({ security, credentials, supergraphSdl: (await buildSchemas()).supergraphSdl, port: 0, subgraphUrls: { catalog: reviews.url, reviews: reviews.url }, log });
    const [a, b] = [wsClient(gateway.wsUrl), wsClient(gateway.wsUrl)];
    try {
      const sockets = countSockets(reviews);
      const fromA = subscribe(a, REVIEW_ADDED, { productId: 'p1' });
      const fromB = subscribe(b, REVIEW_ADDED, { productId: 'p2' });
      const [ofA, ofB] = await channelsOf(feed, 'p1', 'p2');
      expect(sockets()).toBe(1);
      ofA.push(review(1));
      ofB.push(review(2, 'p2'));
      await Promise.all([fromA.waitFor(1), fromB.waitFor(1)]);

      await reviews.stop();
      await Promise.all([fromA.settled, fromB.settled]);

      for (const [received, n] of [[fromA, 1], [fromB, 2]] as const) {
        expect(received.events).toEqual([{ data: { reviewAdded: { id: `r${n}`, body: `review ${n}` } } }]);
        expect(received.errors).toEqual([
          {
            message: 'subscription reviewAdded ended: the connection to subgraph "reviews" was lost (close 1001: Going away); resubscribe from the last cursor it saw',
            extensions: { code: 'SERVICE_UNAVAILABLE', status: 503, subgraph: 'reviews' },
          },
        ]);
      }

      // The subgraph is back where it was; each client resubscribes on its open connection.
      const again = new Feed<Review>();
      reviews = await startReviews(again, port);
      const socketsAgain = countSockets(reviews);
      const resumedA = subscribe(a, REVIEW_ADDED, { productId: 'p1' });
      const resumedB = subscribe(b, REVIEW_ADDED, { productId: 'p2' });
      const [nextA, nextB] = await channelsOf(again, 'p1', 'p2');
      nextA.push(review(3));
      nextB.push(review(4, 'p2'));

      expect(await resumedA.waitFor(1)).toEqual([{ data: { reviewAdded: { id: 'r3', body: 'review 3' } } }]);
      expect(await resumedB.waitFor(1)).toEqual([{ data: { reviewAdded: { id: 'r4', body: 'review 4' } } }]);
      expect(socketsAgain()).toBe(1);
    } finally {
      await Promise.all([a.dispose(), b.dispose()]);
      await gateway.stop();
      await reviews.stop();
    }
  });
});

/** The first two channels `feed` opens, by the product each watches (two connections' subscribes reach the subgraph in either order). */
async function channelsOf(feed: Feed<Review>, first: string, second: string) {
  await Promise.all([feed.channel(1), feed.channel(2)]);
  const of = (productId: string) => feed.channels.slice(0, 2).find((ch) => ch.args.productId === productId)!;
  return [of(first), of(second)] as const;
}
