import { harnessSettings, startHarnessRuntime, type HarnessRuntime } from '@keelson/harness';
import type { MeshEnv } from '@keelson/schema';
import type { Logger, ServiceIdentity } from '@keelson/service';
import type { HarnessActivityDeps, HarnessTaskPlane } from './activities';

/**
 * The harness control plane for a worker process (`harnessTask` turns run their CLI here), opened on
 * the first task it runs: its own pool and listener, the same isolated CLI homes under KEELSON_HOME
 * as the sessions subgraph. A worker that runs no task pays nothing.
 */
export function openHarnessActivityDeps(env: MeshEnv, rawEnv: Record<string, string | undefined>, log: Logger, identity: ServiceIdentity): { deps: HarnessActivityDeps; close(): Promise<void> } {
  let runtime: Promise<HarnessRuntime> | undefined;
  const open = () =>
    (runtime ??= startHarnessRuntime({
      databaseUrl: env.DATABASE_URL,
      settings: harnessSettings(env, rawEnv),
      projects: { url: env.KEELSON_PROJECTS_URL ?? `http://127.0.0.1:${env.KEELSON_PROJECTS_PORT}/graphql`, identity },
      log,
      listenerName: 'keelson-worker-harness-listener',
    }).catch((err: unknown) => {
      runtime = undefined;
      throw err;
    }));
  const plane: HarnessTaskPlane = {
    runTaskTurn: async (taskId, ctl) => (await open()).plane.runTaskTurn(taskId, ctl),
    settleTask: async (taskId, outcome) => (await open()).plane.settleTask(taskId, outcome),
    interruptTask: async (taskId) => (await open()).plane.interruptTask(taskId),
    runSteerTurn: async (input, ctl) => (await open()).plane.runSteerTurn(input, ctl),
  };
  return {
    deps: { plane },
    async close() {
      const r = await runtime?.catch(() => undefined);
      await r?.stop();
    },
  };
}
