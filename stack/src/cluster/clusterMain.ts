import { homedir } from 'node:os';
import { join } from 'node:path';
import { keelsonHome, parseEnv } from '@keelson/schema';
import { ensureDatabase } from '../database';
import { startCluster, type RunningCluster } from './startCluster';

/**
 * `npm run start:cluster`: the production shape on this machine, from the environment `npm start`
 * reads. Services share DATABASE_URL (created if missing) and KEELSON_HOME (the assertion key
 * unless KEELSON_ASSERTION_SECRET is set, the admin token file); Temporal's databases sit beside the
 * mesh's (`<database>_temporal`, `<database>_temporal_visibility`); the load balancer serves the
 * gateway on KEELSON_GATEWAY_PORT.
 */
export async function startClusterFromEnv(rawEnv: NodeJS.ProcessEnv, progress: (line: string) => void): Promise<RunningCluster & { tokenFile: string; logDir: string }> {
  const env = parseEnv(rawEnv);
  if (rawEnv.TEMPORAL_ADDRESS) throw new Error('start:cluster runs its own Temporal server on Postgres: unset TEMPORAL_ADDRESS');
  const home = keelsonHome(env, homedir());
  const { created } = await ensureDatabase(env.DATABASE_URL);
  const database = decodeURIComponent(new URL(env.DATABASE_URL).pathname.replace(/^\//, '')) || 'postgres';
  progress(`Postgres: ${database}${created ? ' (created)' : ''}`);
  const dir = join(home, 'cluster');
  const cluster = await startCluster({
    env: { ...rawEnv, KEELSON_HOME: home },
    databaseUrl: env.DATABASE_URL,
    temporalDatabase: `${database}_temporal`,
    binDir: join(home, 'bin'),
    dir,
    namespace: env.TEMPORAL_NAMESPACE,
    gatewayPort: env.KEELSON_GATEWAY_PORT,
    progress,
  });
  return { ...cluster, tokenFile: join(home, 'token'), logDir: dir };
}
