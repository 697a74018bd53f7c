import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EmbeddingsClient, embeddingsEndpoint } from './embeddings';

jest.setTimeout(60_000);

interface Seen {
  path: string;
  authorization?: string;
  body: { model: string; input: string[]; dimensions?: number };
}

/** A minimal OpenAI-compatible embeddings server: a vector per input, answered in reverse index order. */
async function fakeEmbeddings(behaviour: 'ok' | 'error' | 'slow' = 'ok'): Promise<{ url: string; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  const read = async (req: IncomingMessage) => {
    let text = '';
    for await (const chunk of req) text += chunk;
    return JSON.parse(text) as Seen['body'];
  };
  const server = createServer(async (req, res) => {
    const body = await read(req);
    seen.push({ path: req.url ?? '', authorization: req.headers.authorization, body });
    if (behaviour === 'error') {
      res.writeHead(429, { 'content-type': 'application/json' }).end('{"error":{"message":"rate limited"}}');
      return;
    }
    if (behaviour === 'slow') return; // never answers
    const data = body.input.map((text, index) => ({ object: 'embedding', index, embedding: [text.length, index, 0.5] })).reverse();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data, model: body.model }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, seen, server };
}

describe('the embeddings client (OpenAI-compatible /v1/embeddings)', () => {
  const servers: Server[] = [];
  afterAll(async () => {
    for (const s of servers) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });

  it('posts { model, input } with the bearer token and returns vectors in input order', async () => {
    const fake = await fakeEmbeddings();
    servers.push(fake.server);
    const client = new EmbeddingsClient({ url: fake.url, model: 'embed-small', apiKey: 'sk-test', timeoutMs: 2_000 });
    expect(await client.embed(['a', 'bbb'])).toEqual([
      [1, 0, 0.5],
      [3, 1, 0.5],
    ]);
    expect(fake.seen).toEqual([{ path: '/v1/embeddings', authorization: 'Bearer sk-test', body: { model: 'embed-small', input: ['a', 'bbb'] } }]);
    expect(embeddingsEndpoint('http://h/v1/')).toBe('http://h/v1/embeddings');
    expect(embeddingsEndpoint('http://h/v1/embeddings')).toBe('http://h/v1/embeddings');
  });

  it('fails with UPSTREAM_FAILED naming the endpoint on an error status or a timeout', async () => {
    const failing = await fakeEmbeddings('error');
    const slow = await fakeEmbeddings('slow');
    servers.push(failing.server, slow.server);
    await expect(new EmbeddingsClient({ url: failing.url, model: 'm', timeoutMs: 2_000 }).embed(['x'])).rejects.toMatchObject({
      code: 'UPSTREAM_FAILED',
      message: expect.stringMatching(/\/v1\/embeddings answered 429/),
    });
    await expect(new EmbeddingsClient({ url: slow.url, model: 'm', timeoutMs: 200 }).embed(['x'])).rejects.toMatchObject({
      code: 'UPSTREAM_FAILED',
      message: expect.stringMatching(/no answer within 200 ms/),
    });
  });

  it('asks for the configured length and refuses an answer of another, naming the setting', async () => {
    const fake = await fakeEmbeddings();
    servers.push(fake.server);
    expect(await new EmbeddingsClient({ url: fake.url, model: 'embed-small', timeoutMs: 2_000, dimensions: 3 }).embed(['ab'])).toEqual([[2, 0, 0.5]]);
    expect(fake.seen[0]!.body).toEqual({ model: 'embed-small', input: ['ab'], dimensions: 3 });
    await expect(new EmbeddingsClient({ url: fake.url, model: 'embed-small', timeoutMs: 2_000, dimensions: 8 }).embed(['ab'])).rejects.toMatchObject({
      code: 'UPSTREAM_FAILED',
      message: expect.stringMatching(/returned a vector of 3 dimensions, expected 8 \(KEELSON_EMBEDDINGS_DIMENSIONS\)/),
    });
  });
});
