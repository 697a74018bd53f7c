import 'reflect-metadata';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { expandHome, parseEnv } from '@keelson/schema';
import { createLogger } from '@keelson/service';
import { createActivities } from './activities';
import { connectClient } from './client';
import { ensureCompactionSchedule } from './compactionSchedule';
import { openMemoryActivityDeps } from './memoryDeps';
import { configureTemporalRuntime } from './runtime';
import { startWorker } from './worker';
import { openHarnessActivityDeps } from './harnessDeps';
import { openActivityDeps } from './workerDeps';

/**
 * The worker as its own process (docker-compose `worker`, and the tests that kill it):
 * TEMPORAL_ADDRESS is required here; DATABASE_URL holds run and op state; the projects subgraph
 * (KEELSON_PROJECTS_URL, else its local port) leases worktrees; memory compaction reads and writes
 * through the memory subgraph (KEELSON_MEMORY_URL, else its local port).
 */
async function main(): Promise<void> {
  const env = parseEnv(process.env);
  const log = createLogger('worker', env.KEELSON_LOG_LEVEL);
  if (!env.TEMPORAL_ADDRESS) throw new Error('TEMPORAL_ADDRESS is required to run the worker on its own (npm start runs it in-process)');
  configureTemporalRuntime(env.KEELSON_LOG_LEVEL === 'debug' ? 'info' : 'warn');
  const opened = await openActivityDeps({
    databaseUrl: env.DATABASE_URL,
    projectsUrl: env.KEELSON_PROJECTS_URL ?? `http://127.0.0.1:${env.KEELSON_PROJECTS_PORT}/graphql`,
    log,
    agentTurns: { env: process.env, home: expandHome(env.KEELSON_HOME ?? join(homedir(), '.keelson'), homedir()) },
  });
  const harness = openHarnessActivityDeps(env, process.env, log);
  const memory = openMemoryActivityDeps({
    memoryUrl: env.KEELSON_MEMORY_URL ?? `http://127.0.0.1:${env.KEELSON_MEMORY_PORT}/graphql`,
    env: process.env,
    home: expandHome(env.KEELSON_HOME ?? join(homedir(), '.keelson'), homedir()),
    log,
  });
  const worker = await startWorker({
    address: env.TEMPORAL_ADDRESS,
    namespace: env.TEMPORAL_NAMESPACE,
    taskQueue: env.TEMPORAL_TASK_QUEUE,
    activities: createActivities({ ...opened.deps, harness: harness.deps, memory }),
  });
  // The worker owns memory compaction's Schedule (created, updated or removed to match the env).
  const client = await connectClient({ address: env.TEMPORAL_ADDRESS, namespace: env.TEMPORAL_NAMESPACE });
  try {
    await ensureCompactionSchedule(client, {
      taskQueue: env.TEMPORAL_TASK_QUEUE,
      intervalMs: env.KEELSON_MEMORY_COMPACTION_INTERVAL_MS,
      input: { window: env.KEELSON_MEMORY_COMPACTION_WINDOW, modelClass: 'fast' },
    });
  } finally {
    await client.connection.close();
  }
  log.info({ address: env.TEMPORAL_ADDRESS, taskQueue: env.TEMPORAL_TASK_QUEUE, pid: process.pid }, 'worker polling');
  const stop = () =>
    void worker
      .stop()
      .then(() => opened.close())
      .then(() => harness.close())
      .then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
