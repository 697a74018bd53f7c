import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseEnv, streams } from '@keelson/schema';
import { AssertionKey, serviceIdentity, silentLogger } from '@keelson/service';
import { RUNS_MIGRATIONS_TABLE, runsMigrations, runsSettings } from '@keelson/runs';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db';
import { quietTemporalRuntime, testTemporalAddress } from '../../../test/support/temporalServer';
import { openRunsServices, type OpenedRuns } from './index';

quietTemporalRuntime();

describe('opening the runs domain without serving it', () => {
  let db: TestDatabase;
  let dir: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    dir = await mkdtemp(join(tmpdir(), 'keelson-runs-open-'));
  });

  afterAll(async () => {
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('opens twice at once on a fresh database (two pools, as the ribs and runs services do): each migration runs once, and both read what the other writes', async () => {
    const settings = runsSettings(parseEnv({ KEELSON_HOME: join(dir, 'home'), TEMPORAL_TASK_QUEUE: `runs-open-${randomUUID()}` }), {
      temporal: { address: testTemporalAddress() },
      projectsUrl: 'http://127.0.0.1:1/graphql',
    });
    const open = () => openRunsServices({ databaseUrl: db.url, settings, identity: serviceIdentity(AssertionKey.random(), 'runs'), log: silentLogger() });
    const opened = await Promise.allSettled([open(), open()]);
    const both = opened.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    try {
      expect(opened.map((o) => (o.status === 'rejected' ? String(o.reason) : 'opened'))).toEqual(['opened', 'opened']);
      const [a, b] = both as [OpenedRuns, OpenedRuns];
      const applied = (await a.services.dataSource.query(`SELECT name FROM ${RUNS_MIGRATIONS_TABLE} ORDER BY id`)) as { name: string }[];
      const names = applied.map((m) => m.name);
      expect(new Set(names).size).toBe(names.length);
      expect(names).toEqual(expect.arrayContaining(runsMigrations.map((m) => m.name)));

      const key = randomUUID();
      await a.services.dataSource.transaction((m) => a.services.events.append(m, { stream: streams.ops, key, type: 'OP_LOG', payload: { line: 'written by one' } }));
      expect((await b.services.events.read(streams.ops, 0, { key })).map((e) => e.payload)).toEqual([{ line: 'written by one' }]);
    } finally {
      await Promise.all(both.map((o) => o.close()));
    }
  });
});
