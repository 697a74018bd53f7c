import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import type { Client } from '@temporalio/client';
import { searchAttributes } from '@keelson/schema';
import { quietTemporalRuntime, testTemporalAddress, testWorkflowBundleFile } from '../../test/support/temporalServer';
import { createActivities } from './activities';
import { connectClient, startEcho } from './client';
import { findTemporalCli } from './devServer';
import { startWorker, type RunningWorker } from './worker';

const run = promisify(execFile);

quietTemporalRuntime();

describe('echoWorkflow on a real worker and dev server', () => {
  const address = testTemporalAddress();
  // A queue of its own keeps this file's tasks away from other files' workers on the shared server.
  const taskQueue = `echo-test-${randomUUID()}`;
  let worker: RunningWorker;
  let client: Client;

  beforeAll(async () => {
    worker = await startWorker({ address, taskQueue, activities: createActivities(), workflowBundleFile: testWorkflowBundleFile() });
    client = await connectClient({ address });
  });

  afterAll(async () => {
    await client?.connection.close();
    await worker?.stop();
  });

  it('runs the activity and returns its upper-cased echo and attempt', async () => {
    const handle = await startEcho(client, 'hello mesh', { taskQueue });

    await expect(handle.result()).resolves.toEqual({ echoed: 'HELLO MESH', activityAttempt: 1 });
    expect(handle.workflowId).toMatch(/^echo-[0-9a-f-]{36}$/);
  });

  it('marks the run as a proof that `temporal workflow list` finds by KeelsonKind, with its memo title', async () => {
    const handle = await startEcho(client, 'find me', { taskQueue, title: 'listed proof' });
    await handle.result();

    const description = await handle.describe();
    expect(description.memo).toEqual({ title: 'listed proof' });

    const cli = await findTemporalCli();
    if (!cli) throw new Error('the temporal CLI is missing; globalSetup says how to build it');
    const query = `${searchAttributes.kind}='proof'`;
    // Visibility is eventually consistent: the row can trail the close by a moment.
    let listedIds: string[] = [];
    for (let attempt = 0; attempt < 50 && !listedIds.includes(handle.workflowId); attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 100));
      const { stdout } = await run(cli, ['workflow', 'list', '--address', address, '--query', query, '-o', 'json']);
      const rows: Array<{ execution: { workflowId: string } }> = stdout.trim() ? JSON.parse(stdout) : [];
      listedIds = rows.map((row) => row.execution.workflowId);
    }
    expect(listedIds).toContain(handle.workflowId);
  });
});
