import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseEnv } from '@keelson/schema';
import { silentLogger } from '@keelson/service';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db';
import { ScriptedHermesDriver } from '../../../test/support/scriptedDriver';
import { Places } from '../../src/plane/places';
import type { ProjectInfo, HarnessProjectsApi } from '../../src/plane/projects';
import type { HarnessStore, SessionRecord } from '../../src/plane/store';
import type { DriverRegistry } from '../../src/registry';
import { Turns } from '../../src/plane/turn';
import { startHarnessRuntime, type HarnessRuntime } from '../../src/runtime';
import { harnessSettings, type HarnessSettings } from '../../src/settings';

/**
 * What a test of one part of the control plane stands on: a throwaway database with the sessions
 * migrations, the real store and event log, a scripted hermes CLI (a node script; see
 * test/support/scriptedDriver.ts) and one project in a temporary directory.
 */
export interface PlaneBed {
  dir: string;
  project: ProjectInfo;
  projects: HarnessProjectsApi;
  settings: HarnessSettings;
  driver: ScriptedHermesDriver;
  runtime: HarnessRuntime;
  store: HarnessStore;
  drivers: DriverRegistry;
  log: ReturnType<typeof silentLogger>;
  places: Places;
  /** The turns of this bed (stopped by teardown); `turnsOf` makes more over other drivers. */
  turns: Turns;
  turnsOf(drivers: DriverRegistry): Turns;
  /** A session recorded in the project's root, as `startSession` leaves it. */
  session(): Promise<SessionRecord>;
  /** The event types recorded on a session, in order. */
  eventTypes(sessionId: string): Promise<string[]>;
  teardown(): Promise<void>;
}

export async function startPlaneBed(overrides: Partial<Pick<HarnessSettings, 'leaseMs' | 'turnTimeoutMs' | 'killGraceMs'>> = {}): Promise<PlaneBed> {
  const db: TestDatabase = await createTestDatabase();
  const dir = await realpath(await mkdtemp(join(tmpdir(), 'keelson-plane-')));
  const project: ProjectInfo = { id: '5e1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b', name: 'alpha', rootPath: join(dir, 'alpha'), workspaces: [] };
  await mkdir(project.rootPath);
  const projects: HarnessProjectsApi = { project: async (id) => (id === project.id ? project : null), projects: async () => [project] };
  const settings = { ...harnessSettings(parseEnv({ KEELSON_HOME: join(dir, 'home') }), process.env), leaseMs: 2000, ...overrides };
  const driver = new ScriptedHermesDriver(settings);
  const log = silentLogger();
  const runtime = await startHarnessRuntime({ databaseUrl: db.url, settings, projects, drivers: { hermes: driver }, log });
  const { store, drivers } = runtime.plane;
  const made: Turns[] = [];
  const turnsOf = (registry: DriverRegistry) => {
    const turns = new Turns({ store, drivers: registry, settings, log });
    made.push(turns);
    return turns;
  };
  return {
    dir,
    project,
    projects,
    settings,
    driver,
    runtime,
    store,
    drivers,
    log,
    places: new Places(projects),
    turns: turnsOf(drivers),
    turnsOf,
    async session() {
      await driver.prepare();
      const nativeId = driver.newNativeId();
      const { record } = await store.create({ id: `hermes:${nativeId}`, harnessId: 'hermes', nativeId, projectId: project.id, workspaceId: null, cwd: project.rootPath, title: null, origin: 'started', taskId: null });
      return record;
    },
    async eventTypes(sessionId) {
      const rows = (await runtime.dataSource.query('SELECT type FROM events WHERE key = $1 ORDER BY seq', [sessionId])) as { type: string }[];
      return rows.map((r) => r.type);
    },
    async teardown() {
      await Promise.all(made.map((t) => t.stop()));
      await runtime.stop();
      await db.drop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
