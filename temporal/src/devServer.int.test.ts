import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { quietTemporalRuntime, testWorkflowBundleFile } from '../../test/support/temporalServer';
import { createActivities } from './activities';
import { connectClient, startEcho } from './client';
import { findOwnedProcesses, isAlive } from '@keelson/platform';
import { freePort } from '@keelson/service';
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

    const worker = await startWorker({ address: second.address, taskQueue, activities: createActivities(), workflowBundleFile: testWorkflowBundleFile() });
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

  /**
   * A dev server started on `dbFilename` by another process that is then SIGKILLed, as an OOM kill
   * or a crashed terminal would: the server, in its own process group, lives on.
   */
  async function orphan(dbFilename: string, port: number, uiPort: number): Promise<void> {
    const script = `require('./temporal/src/devServer.ts').startDevServer({ cli: ${JSON.stringify(cli)}, port: ${port}, uiPort: ${uiPort}, dbFilename: ${JSON.stringify(dbFilename)} })
      .then(() => process.stdout.write('ready\\n'), (e) => { console.error(e); process.exit(1); })`;
    const parent = spawn(process.execPath, ['-r', './scripts/register.js', '-e', script], { cwd: join(__dirname, '..', '..'), stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      parent.stdout.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
      parent.once('exit', (code) => reject(new Error(`the starting process exited with ${code}`)));
    });
    parent.kill('SIGKILL');
    await new Promise((r) => parent.once('exit', r));
  }

  it('adopts the server a killed start left on its database file, keeps its workflows, and ends it on stop', async () => {
    const dbFilename = join(dir, 'adopt.db');
    const [port, uiPort] = [await freePort(), await freePort()];
    await orphan(dbFilename, port, uiPort);
    const [left] = await findOwnedProcesses([['--db-filename', dbFilename]]);
    expect(left).toBeDefined();
    const before = await startEcho(await connect(`127.0.0.1:${port}`), 'kept', { taskQueue: `adopt-${randomUUID()}` });

    const server = await startDevServer({ cli, port, uiPort, dbFilename });
    expect(server.previous).toEqual({ outcome: 'adopted', pid: left!.pid });
    expect(server.address).toBe(`127.0.0.1:${port}`);
    expect((await (await connect(server.address)).workflow.getHandle(before.workflowId).describe()).status.name).toBe('RUNNING');

    await server.stop();
    expect(isAlive(left!.pid)).toBe(false);
    expect(await findOwnedProcesses([['--db-filename', dbFilename]])).toEqual([]);
  });

  it('ends a server left on its database file that serves elsewhere than asked, then starts its own', async () => {
    const dbFilename = join(dir, 'moved.db');
    await orphan(dbFilename, await freePort(), await freePort());
    const [left] = await findOwnedProcesses([['--db-filename', dbFilename]]);

    const [port, uiPort] = [await freePort(), await freePort()];
    const server = await start({ dbFilename, port, uiPort });
    expect(server.previous).toEqual({ outcome: 'ended', pid: left!.pid });
    expect(isAlive(left!.pid)).toBe(false);
    expect(server.address).toBe(`127.0.0.1:${port}`);
    const owned = await findOwnedProcesses([['--db-filename', dbFilename]]);
    expect(owned.map((p) => p.pid)).not.toContain(left!.pid);
    expect(owned).toHaveLength(1);
  });
});
