import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { quietTemporalRuntime } from '../../test/support/temporalServer';
import { createActivities } from './activities';
import { connectClient, startEcho } from './client';
import { findTemporalCli, startDevServer, type DevServer } from './devServer';
import { searchAttributeKeys } from './searchAttributeKeys';
import { startWorker } from './worker';

quietTemporalRuntime();

describe('startDevServer', () => {
  let cli: string;
  let dir: string;
  const cleanup: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    const found = await findTemporalCli();
    if (!found) throw new Error('the temporal CLI is missing; globalSetup says how to build it');
    cli = found;
    dir = await mkdtemp(join(tmpdir(), 'keelson-devserver-'));
  });

  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function start(options: { port?: number; uiPort?: number; dbFilename?: string } = {}): Promise<DevServer> {
    const server = await startDevServer({ cli, port: 0, uiPort: 0, ...options });
    cleanup.push(() => server.stop());
    return server;
  }

  async function connect(address: string): Promise<Client> {
    const client = await connectClient({ address });
    cleanup.push(() => client.connection.close());
    return client;
  }

  it('keeps a started workflow across a restart on the same database file, and lets a worker finish it', async () => {
    const dbFilename = join(dir, 'temporal.db');
    const taskQueue = `restart-${randomUUID()}`;
    const first = await start({ dbFilename });
    const port = Number(first.address.split(':').pop());
    const uiPort = Number(new URL(first.uiUrl).port);

    // No worker polls the queue yet, so the workflow waits on its first task through the restart.
    const before = await startEcho(await connect(first.address), 'survive', { taskQueue });
    await first.stop();

    const second = await start({ dbFilename, port, uiPort });
    const client = await connect(second.address);
    const handle = client.workflow.getHandle(before.workflowId);
    const description = await handle.describe();
    expect(description.status.name).toBe('RUNNING');
    expect(description.runId).toBe(before.firstExecutionRunId);
    expect(description.typedSearchAttributes.get(searchAttributeKeys.kind)).toBe('proof');

    const worker = await startWorker({ address: second.address, taskQueue, activities: createActivities() });
    cleanup.push(() => worker.stop());
    await expect(handle.result()).resolves.toEqual({ echoed: 'SURVIVE', activityAttempt: 1 });
  });

  it('fails with the server output when the server exits before serving', async () => {
    const dbFilename = join(dir, 'missing-folder', 'temporal.db');

    await expect(startDevServer({ cli, port: 0, uiPort: 0, dbFilename })).rejects.toThrow(
      /did not become ready at 127\.0\.0\.1:\d+: exited with code 1[\s\S]*Last server output:\n.*failed checking dir for database file/,
    );
  });

  it('refuses a port another server already holds, naming it', async () => {
    const running = await start();
    const port = Number(running.address.split(':').pop());

    await expect(startDevServer({ cli, port, uiPort: 0 })).rejects.toThrow(`port 127.0.0.1:${port} is already in use`);
  });
});
