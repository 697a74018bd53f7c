import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ModelServer } from '@keelson/model-server';
import { silentLogger } from '@keelson/service';
import { startMesh, type MeshOptions, type RunningMesh } from '@keelson/stack';
import { assertionCredentials } from './auth';
import { bearer, registerCredentials } from './client';
import { createTestDatabase, type TestDatabase } from './db';
import { testTemporalAddress, testWorkflowBundleFile } from './temporalServer';

export interface TestMesh extends RunningMesh {
  db: TestDatabase;
  /** Temp folder holding the workspace root, the Keelson home and git's config. */
  dir: string;
  workspaceRoot: string;
  /** The environment the mesh (and git) run with. */
  env: RunningMesh['env'];
  rawEnv: NodeJS.ProcessEnv;
  /** Stops the mesh, drops the database, removes the temp folder. */
  teardown(): Promise<void>;
}

export interface TestMeshOptions {
  /** Run the worker in-process. A test that kills its worker runs `apps/worker/main.ts` itself. @default true */
  worker?: boolean;
  /** A Temporal server of the test's own. @default the jest-wide dev server */
  temporal?: { address: string; uiUrl?: string };
  /** The rib host's overrides (an explicit `available` map of test ribs). @default discovery */
  ribHost?: MeshOptions['ribHost'];
  /** Tuning of the ribs' run seams (a region heartbeat time scale). */
  ribRuns?: MeshOptions['ribRuns'];
  /** Where the mesh logs. @default nowhere */
  log?: MeshOptions['log'];
}

/**
 * The whole mesh booted in-process on free ports, against a fresh database, the run's Temporal
 * dev server (on a task queue of its own, so meshes of parallel test files never run each other's
 * activities) and a temp workspace, with its own git identity.
 */
export async function startTestMesh(extraEnv: NodeJS.ProcessEnv = {}, options: TestMeshOptions = {}): Promise<TestMesh> {
  const db = await createTestDatabase();
  const dir = await mkdtemp(join(tmpdir(), 'keelson-e2e-'));
  const gitconfig = join(dir, 'gitconfig');
  await writeFile(gitconfig, '[user]\n\tname = Keelson Test\n\temail = test@keelson.invalid\n[init]\n\tdefaultBranch = main\n');
  const workspaceRoot = join(dir, 'workspace');
  const rawEnv: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: db.url,
    KEELSON_HOME: join(dir, 'home'),
    KEELSON_WORKSPACE: workspaceRoot,
    GIT_CONFIG_GLOBAL: gitconfig,
    GIT_CONFIG_NOSYSTEM: '1',
    TEMPORAL_ADDRESS: undefined,
    TEMPORAL_TASK_QUEUE: `test-mesh-${randomUUID()}`,
    // The run's workflow bundle, built once (worker processes a test starts inherit it).
    KEELSON_WORKFLOW_BUNDLE: testWorkflowBundleFile(),
    // Worker processes a test starts serve no metrics port unless the test names one.
    KEELSON_WORKER_METRICS_PORT: '0',
    ...extraEnv,
  };
  let mesh: RunningMesh;
  try {
    mesh = await startMesh({
      env: rawEnv,
      ephemeralPorts: true,
      temporal: options.temporal ?? { address: testTemporalAddress(), uiUrl: process.env.KEELSON_TEST_TEMPORAL_UI_URL },
      worker: options.worker,
      // Meshes of parallel test files share one Temporal server: each removes its own Schedule.
      compaction: { removeOnStop: true },
      ...(options.ribHost ? { ribHost: options.ribHost } : {}),
      ...(options.ribRuns ? { ribRuns: options.ribRuns } : {}),
      log: options.log ?? silentLogger(),
    });
  } catch (err) {
    await db.drop();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  // Every request a test sends through the support client is authenticated: the gateway with the
  // mesh's admin token, each subgraph with a signed assertion (as the gateway would send).
  const unregister = [
    ...(mesh.adminToken ? [registerCredentials(mesh.gatewayUrl, bearer(mesh.adminToken.token))] : []),
    ...Object.values(mesh.subgraphUrls).map((url) => registerCredentials(url, assertionCredentials(mesh.security.assertions))),
  ];
  return {
    ...mesh,
    db,
    dir,
    workspaceRoot,
    rawEnv,
    async teardown() {
      for (const u of unregister) u();
      await mesh.stop();
      // A managed ClickClack outlives the mesh while a swarm still runs on it (so a restart adopts it): a test ends it.
      await mesh.swarms.bus.managed?.stop().catch(() => undefined);
      await db.drop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The provider environment that makes the local model server the mesh's only provider (as anthropic). */
export function modelServerEnv(server: ModelServer): NodeJS.ProcessEnv {
  return {
    KEELSON_ANTHROPIC_BASE_URL: server.anthropicBaseUrl,
    ANTHROPIC_API_KEY: 'e2e-key',
    KEELSON_OPENAI_BASE_URL: undefined,
    OPENAI_API_KEY: undefined,
    KEELSON_MODEL_BASE_URL: undefined,
    KEELSON_DEFAULT_PROVIDER: undefined,
  };
}
