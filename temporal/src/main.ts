import 'reflect-metadata';
import { parseEnv } from '@keelson/schema';
import { createLogger } from '@keelson/service';
import { createActivities } from './activities';
import { configureTemporalRuntime } from './runtime';
import { startWorker } from './worker';

/** The worker as its own process (docker-compose `worker`): TEMPORAL_ADDRESS is required here. */
async function main(): Promise<void> {
  const env = parseEnv(process.env);
  const log = createLogger('worker', env.KEELSON_LOG_LEVEL);
  if (!env.TEMPORAL_ADDRESS) throw new Error('TEMPORAL_ADDRESS is required to run the worker on its own (npm start runs it in-process)');
  configureTemporalRuntime(env.KEELSON_LOG_LEVEL === 'debug' ? 'info' : 'warn');
  const worker = await startWorker({ address: env.TEMPORAL_ADDRESS, namespace: env.TEMPORAL_NAMESPACE, activities: createActivities() });
  log.info({ address: env.TEMPORAL_ADDRESS }, 'worker polling');
  const stop = () => void worker.stop().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
