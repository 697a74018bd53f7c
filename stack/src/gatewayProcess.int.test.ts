import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGatewayProcess, type GatewayProcess } from './gatewayProcess';

/** A gateway process with authentication off (loopback) over subgraphs that are not there: it starts all the same. */
describe('startGatewayProcess', () => {
  let home: string;
  const started: GatewayProcess[] = [];
  const env = () => ({ ...process.env, KEELSON_HOME: home, KEELSON_AUTH: 'off', KEELSON_LOG_LEVEL: 'warn' });
  const subgraphUrls = { projects: 'http://127.0.0.1:1/graphql' };

  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), 'keelson-gateway-process-'));
  });
  afterAll(async () => {
    await Promise.all(started.map((g) => g.stop(1_000)));
    await rm(home, { recursive: true, force: true });
  });

  it('serves once /health answers, points the gateway at the given subgraphs, and stops on request', async () => {
    const gateway = await startGatewayProcess({ env: env(), host: '127.0.0.1', port: 0, subgraphUrls, onStderr: () => {} });
    started.push(gateway);

    expect(gateway.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/graphql$/);
    const res = await fetch(gateway.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ projects { id } }' }) });
    const body = (await res.json()) as { errors?: { extensions?: { code?: string } }[] };
    // The projects subgraph it was pointed at does not listen: the gateway says so, from its own process.
    expect(body.errors?.[0]?.extensions?.code).toBe('SERVICE_UNAVAILABLE');
    expect(() => process.kill(gateway.pid, 0)).not.toThrow();

    await gateway.stop();
    await expect(gateway.exited).resolves.toMatchObject({ requested: true });
    expect(() => process.kill(gateway.pid, 0)).toThrow();
  });

  it('reports a process that dies on its own as not requested, with its signal', async () => {
    const gateway = await startGatewayProcess({ env: env(), host: '127.0.0.1', port: 0, subgraphUrls, onStderr: () => {} });
    started.push(gateway);
    process.kill(gateway.pid, 'SIGKILL');

    await expect(gateway.exited).resolves.toEqual({ code: null, signal: 'SIGKILL', requested: false });
  });

  it('fails to start, with the gateway\'s own words, when its port is taken', async () => {
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const port = (taken.address() as AddressInfo).port;
      await expect(startGatewayProcess({ env: env(), host: '127.0.0.1', port, subgraphUrls, onStderr: () => {} })).rejects.toThrow(/exited while starting.*EADDRINUSE/s);
    } finally {
      taken.close();
    }
  });
});
