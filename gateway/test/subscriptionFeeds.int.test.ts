import type { Client } from 'graphql-ws';
import { silentLogger } from '@keelson/service';
import { startGateway, type RunningGateway } from '../src';
import { bearers, eventually, executions, review, REVIEW_ADDED, REVIEW_ADDED_WITH_PRODUCT, security, startSubgraphs, subscribe, TestCredentials, wsClient, type Subgraphs, disposeClients, stopGatewayAndSubgraphs } from './fixtures';

// Identical subscriptions (document, operation name, variables) of one caller share one upstream
// subscription — a feed — until its first event: schema/PROTOCOL.md, "Gateway subscription routing", rule 5.

const credentials = new TestCredentials();

describe('identical subscriptions of one caller', () => {
  let subgraphs: Subgraphs;
  let gateway: RunningGateway;
  const clients: Client[] = [];
  const client = (): Client => clients[clients.push(wsClient(gateway.wsUrl)) - 1]!;
  const nextChannel = () => subgraphs.feed.channel(subgraphs.feed.channels.length + 1);

  beforeAll(async () => {
    subgraphs = await startSubgraphs();
    const subgraphUrls = { catalog: subgraphs.catalog.url, reviews: subgraphs.reviews.url };
    gateway = await startGateway({ security, credentials, supergraphSdl: subgraphs.supergraphSdl, port: 0, subgraphUrls, log: silentLogger() });
  });

  afterEach(() => disposeClients(clients, subgraphs));
  afterAll(() => stopGatewayAndSubgraphs(gateway, subgraphs));

  /**
   * Resolves once the gateway serves every subscribe `c` sent so far: a distinct sentinel sent
   * after them has reached the subgraph (a connection's messages are handled in order).
   */
  let sentinels = 0;
  const served = async (c: Client) => {
    sentinels += 1;
    subscribe(c, REVIEW_ADDED, { productId: `sentinel-${sentinels}` });
    await nextChannel();
  };
  const sentinel = (channel: { args: Record<string, unknown> }) => String(channel.args.productId).startsWith('sentinel-');

  it('share one upstream subscription across connections, each event completed once and delivered to all', async () => {
    const opened = subgraphs.feed.channels.length;
    const [a, b, c] = [client(), client(), client()];
    const fromA = subscribe(a, REVIEW_ADDED_WITH_PRODUCT);
    const channel = await nextChannel();
    const fromB = subscribe(b, REVIEW_ADDED_WITH_PRODUCT);
    const fromC = subscribe(c, REVIEW_ADDED_WITH_PRODUCT);
    await served(b);
    await served(c);
    const before = executions.productReferences;

    channel.push(review(1, 'p2'));
    channel.push(review(2, 'p1'));

    const expected = [
      { data: { reviewAdded: { id: 'r1', body: 'review 1', product: { name: 'Rib', price: 45 } } } },
      { data: { reviewAdded: { id: 'r2', body: 'review 2', product: { name: 'Keel', price: 120 } } } },
    ];
    for (const received of [fromA, fromB, fromC]) expect(await received.waitFor(2)).toEqual(expected);
    // One entity fetch per event, not one per subscriber; one upstream subscription for the three.
    expect(executions.productReferences - before).toBe(2);
    expect(subgraphs.feed.channels.slice(opened).filter((ch) => !sentinel(ch))).toEqual([channel]);
  });

  it('keep the stream when the connection that opened it leaves; the last to leave cancels upstream', async () => {
    const a = wsClient(gateway.wsUrl);
    const b = client();
    subscribe(a, REVIEW_ADDED, { productId: 'p1' });
    const channel = await nextChannel();
    const fromB = subscribe(b, REVIEW_ADDED, { productId: 'p1' });
    await served(b);
    // One caller: one link for both connections.
    expect(subgraphs.reviewsSockets()).toBe(1);

    await a.dispose();
    channel.push(review(1));

    expect(await fromB.waitFor(1)).toEqual([{ data: { reviewAdded: { id: 'r1', body: 'review 1' } } }]);
    expect(channel.returnCalls).toBe(0);
    expect(subgraphs.reviewsSockets()).toBe(1);

    fromB.unsubscribe();
    await eventually(() => channel.returnCalls === 1, 'the last subscriber cancelled upstream');
    // The link stays for b's sentinel stream.
    expect(subgraphs.reviewsSockets()).toBe(1);
  });

  it('get a stream of their own once the first has delivered an event (nothing their cursor asks for is missed)', async () => {
    const first = subscribe(client(), REVIEW_ADDED, { productId: 'p1' });
    const firstChannel = await nextChannel();
    firstChannel.push(review(1));
    await first.waitFor(1);

    const second = subscribe(client(), REVIEW_ADDED, { productId: 'p1' });
    const secondChannel = await nextChannel();
    secondChannel.push(review(2));
    firstChannel.push(review(3));

    expect(await second.waitFor(1)).toEqual([{ data: { reviewAdded: { id: 'r2', body: 'review 2' } } }]);
    expect(await first.waitFor(2)).toEqual([
      { data: { reviewAdded: { id: 'r1', body: 'review 1' } } },
      { data: { reviewAdded: { id: 'r3', body: 'review 3' } } },
    ]);
    expect(secondChannel).not.toBe(firstChannel);
  });

  it('are never shared between two callers, even with the same scopes', async () => {
    const admin = subscribe(client(), REVIEW_ADDED);
    const first = await nextChannel();
    const otherClient = wsClient(gateway.wsUrl, bearers.otherAdmin);
    clients.push(otherClient);
    const other = subscribe(otherClient, REVIEW_ADDED);
    const second = await nextChannel();

    first.push(review(1));
    second.push(review(2));

    expect(second).not.toBe(first);
    expect(await admin.waitFor(1)).toEqual([{ data: { reviewAdded: { id: 'r1', body: 'review 1' } } }]);
    expect(await other.waitFor(1)).toEqual([{ data: { reviewAdded: { id: 'r2', body: 'review 2' } } }]);
    expect(subgraphs.reviewsSockets()).toBe(2);
  });
  it('never hand one frame to subscriptions of other selections, variables or scopes', async () => {
    const c = client();
    const plain = subscribe(c, REVIEW_ADDED);
    const plainChannel = await nextChannel();
    const withProduct = subscribe(c, REVIEW_ADDED_WITH_PRODUCT);
    const withProductChannel = await nextChannel();
    const ofP2 = subscribe(client(), REVIEW_ADDED, { productId: 'p2' });
    const ofP2Channel = await nextChannel();
    const readerClient = wsClient(gateway.wsUrl, bearers.reader);
    clients.push(readerClient);
    const byReader = subscribe(readerClient, REVIEW_ADDED);
    await byReader.settled;

    expect(new Set([plainChannel, withProductChannel, ofP2Channel]).size).toBe(3);
    plainChannel.push(review(1));
    withProductChannel.push(review(2));
    ofP2Channel.push(review(3, 'p2'));

    expect(await plain.waitFor(1)).toEqual([{ data: { reviewAdded: { id: 'r1', body: 'review 1' } } }]);
    expect(await withProduct.waitFor(1)).toEqual([{ data: { reviewAdded: { id: 'r2', body: 'review 2', product: { name: 'Keel', price: 120 } } } }]);
    expect(await ofP2.waitFor(1)).toEqual([{ data: { reviewAdded: { id: 'r3', body: 'review 3' } } }]);
    // A sentinel event behind each: had any frame gone to another subscription, it would be there by now.
    plainChannel.push(review(4));
    withProductChannel.push(review(5));
    ofP2Channel.push(review(6, 'p2'));
    await Promise.all([plain.waitFor(2), withProduct.waitFor(2), ofP2.waitFor(2)]);
    expect([plain, withProduct, ofP2].map((r) => r.events.map((e) => (e.data as { reviewAdded: { id: string } }).reviewAdded.id))).toEqual([
      ['r1', 'r4'],
      ['r2', 'r5'],
      ['r3', 'r6'],
    ]);
    // Another caller without the scope is refused before anything is shared with it.
    expect(byReader.events).toEqual([]);
    expect(JSON.stringify(byReader.errors)).toContain('FORBIDDEN');
  });
});
