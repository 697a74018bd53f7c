// Records the event history of every workflow scenario below into temporal/histories/<name>.json, for
// replay.int.test.ts. Re-record only on purpose: a history is the contract that deployed runs hold us to.
//   node -r ./scripts/register.js temporal/scripts/recordHistories.ts [--address host:port]
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { workflowTypes } from '@keelson/schema';
import { connectClient, createActivities, ensureTemporalCli, startDevServer, startEcho, startWorker } from '../src';

const TASK_QUEUE = 'record-histories';

/** One finished run per workflow type; each returns the id of the run to record. */
const scenarios: Record<string, (client: Client) => Promise<string>> = {
  [workflowTypes.echo]: async (client) => {
    const handle = await startEcho(client, 'recorded echo', { taskQueue: TASK_QUEUE, workflowId: 'echo-recorded' });
    await handle.result();
    return handle.workflowId;
  },
};

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const addressFlag = process.argv.indexOf('--address');
  const server =
    addressFlag === -1 ? await startDevServer({ cli: await ensureTemporalCli({ log: console.log }), port: 0, uiPort: 0 }) : undefined;
  const address = server?.address ?? process.argv[addressFlag + 1];
  const worker = await startWorker({ address, taskQueue: TASK_QUEUE, activities: createActivities() });
  const client = await connectClient({ address });
  try {
    for (const [name, scenario] of Object.entries(scenarios)) {
      const workflowId = await scenario(client);
      const history = await client.workflow.getHandle(workflowId).fetchHistory();
      const file = join(__dirname, '..', 'histories', `${name}.json`);
      await writeFile(file, `${JSON.stringify(JSON.parse(historyToJSON(history)), null, 2)}\n`);
      console.log(`recorded ${name} (${history.events?.length ?? 0} events) → ${file}`);
    }
  } finally {
    await client.connection.close();
    await worker.stop();
    await server?.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
