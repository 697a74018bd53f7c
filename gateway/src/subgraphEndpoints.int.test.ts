import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { GraphQLDataSourceProcessOptions } from '@apollo/gateway';
import type { GatewayGraphQLRequestContext } from '@apollo/server-gateway-interface';
import { ASSERTION_HEADER, type Caller } from '@keelson/schema';
import { AssertionKey, silentLogger } from '@keelson/service';
import { subgraphFetcher, type SubgraphFetcher } from './subgraphFetcher';
import { SubgraphDataSource } from './subgraphEndpoints';

/**
 * A real HTTP subgraph stand-in that answers every POST after 150 ms with the number of requests it
 * has received so far and the assertion it was sent: requests in flight together overlap, and how
 * many fetches the data source made is read off the answers.
 */
let server: Server;
let url: string;
let received = 0;
/** What the stand-in was last sent: its headers and its body. */
let last: { headers: Record<string, unknown>; body: unknown } | undefined;
let fetcher: SubgraphFetcher;
const key = AssertionKey.random();

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const n = ++received;
      const assertion = String(req.headers[ASSERTION_HEADER] ?? '');
      const { query } = JSON.parse(body) as { query: string };
      last = { headers: req.headers, body: JSON.parse(body) as unknown };
      setTimeout(() => {
        // A query naming one of these is answered so: a cache hint, an upstream failure, a body that is not JSON.
        if (query.includes('cacheable')) res.setHeader('cache-control', 'max-age=30, private');
        if (query.includes('broken')) return res.writeHead(502, { 'content-type': 'text/plain' }).end('upstream down');
        if (query.includes('plain')) return res.writeHead(200, { 'content-type': 'text/plain' }).end('just text');
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ data: { n, query, assertion } }));
      }, 150);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
  fetcher = subgraphFetcher();
});

afterAll(async () => {
  await fetcher.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function dataSource(): SubgraphDataSource {
  return new SubgraphDataSource({ name: 'stub', url, wsUrl: url.replace('http', 'ws') }, key, silentLogger(), fetcher.fetcher);
}

/** The request's cache policy as Apollo Server keeps it: here, the hints it was narrowed by. */
type RecordingPolicy = { restrict(hint: unknown): void; hints: unknown[] };

function operation(query: string, caller: Caller, variables: Record<string, unknown> = {}, policy?: RecordingPolicy) {
  const context = { caller };
  // As the gateway's executor calls it for a query plan's fetch (the enum's value: the package does not export it).
  return {
    kind: 'incoming operation',
    request: { query, variables, operationName: 'Q' },
    context,
    incomingRequestContext: { context, ...(policy ? { overallCachePolicy: policy } : {}) } as unknown as GatewayGraphQLRequestContext<{ caller?: Caller }>,
  } as unknown as GraphQLDataSourceProcessOptions<{ caller?: Caller }>;
}

function send(source: SubgraphDataSource, query: string, caller: Caller, variables: Record<string, unknown> = {}) {
  return source.process(operation(query, caller, variables)).then((r) => r.data as { n: number; assertion: string });
}

function recordingPolicy(): RecordingPolicy {
  const hints: unknown[] = [];
  return { hints, restrict: (hint) => hints.push(hint) };
}

const alice = (scopes: Caller['scopes']): Caller => ({ subject: 'alice', kind: 'jwt', scopes });

describe('SubgraphDataSource requests and answers', () => {
  it('posts the operation as JSON with the caller asserted, and narrows the cache policy by the answer', async () => {
    const source = dataSource();
    const policy = recordingPolicy();
    const answer = await source.process(operation('query Q($x: Int) { cacheable(x: $x) }', alice(['read']), { x: 7 }, policy));

    expect(last!.body).toEqual({ query: 'query Q($x: Int) { cacheable(x: $x) }', variables: { x: 7 }, operationName: 'Q' });
    expect(last!.headers['content-type']).toBe('application/json');
    expect(await key.verify(last!.headers[ASSERTION_HEADER] as string)).toEqual(alice(['read']));
    expect(last!.headers.traceparent).toBeUndefined();
    expect(answer.data).toMatchObject({ query: 'query Q($x: Int) { cacheable(x: $x) }' });
    expect(answer.http?.status).toBe(200);
    expect(policy.hints).toEqual([{ maxAge: 30, scope: 'PRIVATE' }]);

    const uncached = recordingPolicy();
    await source.process(operation('query Q { a }', alice(['read']), {}, uncached));
    expect(uncached.hints).toEqual([{ maxAge: 0 }]);
  });

  it("answers a subgraph's failure status as its error, a body that is not JSON as an error, and a subgraph it cannot reach as SERVICE_UNAVAILABLE", async () => {
    const source = dataSource();
    await expect(source.process(operation('{ broken }', alice(['read'])))).rejects.toMatchObject({
      message: '502: Bad Gateway',
      extensions: { response: { status: 502, body: 'upstream down' } },
    });
    await expect(source.process(operation('{ plain }', alice(['read'])))).rejects.toThrow('Expected JSON response body, but received: just text');

    const gone = new SubgraphDataSource({ name: 'gone', url: 'http://127.0.0.1:1/graphql', wsUrl: 'ws://127.0.0.1:1/graphql' }, key, silentLogger(), fetcher.fetcher);
    await expect(gone.process(operation('{ a }', alice(['read'])))).rejects.toMatchObject({
      message: 'subgraph "gone" is unreachable; retry shortly',
      extensions: { code: 'SERVICE_UNAVAILABLE' },
    });
    const nobody = { ...operation('{ a }', alice(['read'])), context: {} } as GraphQLDataSourceProcessOptions<{ caller?: Caller }>;
    await expect(gone.process(nobody)).rejects.toThrow('a subgraph request without a caller: refusing to send it unasserted');
  });
});

describe('SubgraphDataSource in-flight deduplication', () => {
  it('fetches once for identical queries of one caller in flight together, each sharer getting its own copy', async () => {
    const source = dataSource();
    const before = received;
    const answers = await Promise.all(Array.from({ length: 4 }, () => send(source, 'query Q { a }', alice(['read']))));

    expect(received - before).toBe(1);
    expect(new Set(answers.map((a) => a.n))).toEqual(new Set([before + 1]));
    answers[0]!.n = -1;
    expect(answers[1]!.n).toBe(before + 1);
  });

  it('never shares between callers who differ only in scopes: each gets the answer fetched under its own assertion', async () => {
    const source = dataSource();
    const before = received;
    const [reader, admin] = await Promise.all([send(source, 'query Q { a }', alice(['read'])), send(source, 'query Q { a }', alice(['admin']))]);

    expect(received - before).toBe(2);
    expect(reader.n).not.toBe(admin.n);
    expect((await key.verify(reader.assertion)).scopes).toEqual(['read']);
    expect((await key.verify(admin.assertion)).scopes).toEqual(['admin']);
  });

  it('never shares between different subjects, token ids or variables', async () => {
    const source = dataSource();
    const before = received;
    await Promise.all([
      send(source, 'query Q { a }', alice(['read'])),
      send(source, 'query Q { a }', { ...alice(['read']), subject: 'bob' }),
      send(source, 'query Q { a }', { ...alice(['read']), kind: 'token', tokenId: 't1' }),
      send(source, 'query Q { a }', { ...alice(['read']), kind: 'token', tokenId: 't2' }),
      send(source, 'query Q($x: Int) { a(x: $x) }', alice(['read']), { x: 1 }),
      send(source, 'query Q($x: Int) { a(x: $x) }', alice(['read']), { x: 2 }),
    ]);

    expect(received - before).toBe(6);
  });

  it('never deduplicates a mutation, even identical and from one caller', async () => {
    const source = dataSource();
    const before = received;
    const answers = await Promise.all(Array.from({ length: 3 }, () => send(source, 'mutation M { bump }', alice(['admin']))));

    expect(received - before).toBe(3);
    expect(new Set(answers.map((a) => a.n)).size).toBe(3);
  });

  it('fetches again once the first answer is in (it shares in flight only, it caches nothing)', async () => {
    const source = dataSource();
    const before = received;
    const first = await send(source, '{ a }', alice(['read']));
    const second = await send(source, '{ a }', alice(['read']));

    expect(received - before).toBe(2);
    expect(second.n).toBe(first.n + 1);
  });
});
