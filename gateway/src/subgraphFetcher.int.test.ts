import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from '@keelson/service';
import { subgraphFetcher, type SubgraphFetcher } from './subgraphFetcher';

/**
 * A real HTTP server standing in for a subgraph: `/echo` answers JSON with what it received,
 * `/fail` answers 502 in plain text with two `x-note` headers, `/slow` answers after 2 s.
 */
let server: Server;
let base: string;
let fetcher: SubgraphFetcher;
const peers = new Set<string>();

beforeAll(async () => {
  server = createServer((req, res) => {
    peers.add(`${req.socket.remotePort}`);
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      if (req.url === '/fail') {
        res.writeHead(502, { 'content-type': 'text/plain', 'x-note': ['one', 'two'] });
        res.end('bad gateway upstream');
        return;
      }
      if (req.url === '/big') {
        // 300 KB of JSON in many writes, a multi-byte character split across two of them, behind a byte order mark.
        const json = Buffer.from(JSON.stringify({ items: Array.from({ length: 20_000 }, (_, i) => `ä${i}`) }));
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(Buffer.from([0xef, 0xbb, 0xbf]));
        for (let i = 0; i < json.length; i += 4_097) res.write(json.subarray(i, i + 4_097));
        res.end();
        return;
      }
      if (req.url === '/slow') {
        const timer = setTimeout(() => res.end('{}'), 2000);
        res.once('close', () => clearTimeout(timer));
        return;
      }
      res.setHeader('content-type', 'application/json; charset=utf-8');
      res.end(JSON.stringify({ method: req.method, url: req.url, assertion: req.headers['x-test'] ?? null, body }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fetcher = subgraphFetcher();
});

afterAll(async () => {
  await fetcher.close();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('subgraphFetcher', () => {
  it('sends the method, path, query string, headers and body, and answers status, headers and JSON as Apollo reads them', async () => {
    const response = await fetcher.fetcher(`${base}/echo?x=1`, { method: 'POST', headers: { 'x-test': 'signed', 'content-type': 'application/json' }, body: '{"query":"{ a }"}' });

    expect(response.status).toBe(200);
    expect(response.ok).toBe(true);
    expect(response.statusText).toBe('OK');
    expect(response.url).toBe(`${base}/echo?x=1`);
    expect(response.headers.get('Content-Type')).toBe('application/json; charset=utf-8');
    expect(response.headers.has('CONTENT-TYPE')).toBe(true);
    expect(response.headers.get('x-absent')).toBeNull();
    expect(response.bodyUsed).toBe(false);
    expect(await response.json()).toEqual({ method: 'POST', url: '/echo?x=1', assertion: 'signed', body: '{"query":"{ a }"}' });
    expect(response.bodyUsed).toBe(true);
  });

  it('answers a non-2xx status as not ok, with its status text, joined repeated headers and the body as text', async () => {
    const response = await fetcher.fetcher(`${base}/fail`, { method: 'POST', body: '{}' });

    expect(response.status).toBe(502);
    expect(response.ok).toBe(false);
    expect(response.statusText).toBe('Bad Gateway');
    expect(response.headers.get('x-note')).toBe('one, two');
    expect([...response.headers].find(([name]) => name === 'content-type')).toEqual(['content-type', 'text/plain']);
    expect(await response.text()).toBe('bad gateway upstream');
  });

  it('reads a body that arrives in many chunks whole (a byte order mark dropped, as fetch does), and only once', async () => {
    const response = await fetcher.fetcher(`${base}/big`, { method: 'POST', body: '{}' });
    const body = (await response.json()) as { items: string[] };

    expect(body.items).toHaveLength(20_000);
    expect(body.items[19_999]).toBe('ä19999');
    expect(body.items.every((item, i) => item === `ä${i}`)).toBe(true);
    expect(response.bodyUsed).toBe(true);
    await expect(response.text()).rejects.toThrow(/already read/);
  });

  it('keeps connections alive across requests sent one after another', async () => {
    peers.clear();
    for (let i = 0; i < 20; i++) await (await fetcher.fetcher(`${base}/echo`, { method: 'POST', body: String(i) })).text();

    // A connection goes back to the pool a moment after its body is read, so the next request may take a second one.
    expect(peers.size).toBeLessThanOrEqual(2);
  });

  it('leaves the body stream out of a structuredClone copy (the data source copies shared answers)', async () => {
    const response = await fetcher.fetcher(`${base}/echo`, { method: 'POST', body: '{}' });
    const copy = structuredClone(response);
    await response.text();

    expect(copy).toEqual({ url: `${base}/echo`, redirected: false, status: 200, headers: {} });
  });

  it('rejects when the subgraph cannot be reached, and when the signal aborts', async () => {
    const closed = await freePort();
    await expect(fetcher.fetcher(`http://127.0.0.1:${closed}/graphql`, { method: 'POST', body: '{}' })).rejects.toThrow(/ECONNREFUSED|connect/);

    const abort = new AbortController();
    const slow = fetcher.fetcher(`${base}/slow`, { method: 'POST', body: '{}', signal: abort.signal });
    abort.abort();
    await expect(slow).rejects.toThrow(/abort/i);
  });
});
