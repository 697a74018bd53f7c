import { silentLogger } from '@keelson/service';
import type { DataSource } from 'typeorm';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db';
import { createDataSource, initializeAndMigrate } from '../data/dataSource';
import { byId, IdempotencyKeys, inputHash, whole } from './idempotency';

jest.setTimeout(60_000);


describe('idempotency keys (one implementation for every create/start mutation)', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let keys: IdempotencyKeys;
  /** The "created rows" of a fake mutation, so the test counts side effects. */
  const made = new Map<string, { id: string; name: string }>();
  const create = (name: string) => async () => {
    const row = { id: `p${made.size + 1}`, name };
    made.set(row.id, row);
    return row;
  };
  const codec = byId(async (id) => made.get(id) ?? null);

  beforeAll(async () => {
    db = await createTestDatabase();
    ({ dataSource } = createDataSource({ url: db.url, entities: [], migrations: [], migrationsTableName: 'idem_migrations', log: silentLogger() }));
    await initializeAndMigrate(dataSource);
    keys = new IdempotencyKeys(dataSource, { claimLeaseMs: 300, waitMs: 2_000 });
  });
  afterAll(async () => {
    await dataSource.destroy();
    await db.drop();
  });

  it('runs the mutation once per key: a repeat with the same input gets the original, another input is CONFLICT', async () => {
    const call = { subject: 'user:a', mutation: 'createProject', key: 'k-1', input: { name: 'x', rootPath: null } };
    const first = await keys.run(call, codec, create('x'));
    const again = await keys.run({ ...call, input: { rootPath: null, name: 'x' } }, codec, create('x'));
    expect(again).toEqual(first);
    expect(made.size).toBe(1);
    await expect(keys.run({ ...call, input: { name: 'y' } }, codec, create('y'))).rejects.toMatchObject({ code: 'CONFLICT' });
    // Keys are per caller and per mutation.
    await keys.run({ ...call, subject: 'user:b' }, codec, create('x'));
    await keys.run({ ...call, mutation: 'cloneProject' }, codec, create('x'));
    expect(made.size).toBe(3);
    // Without a key every call runs.
    await keys.run({ ...call, key: null }, codec, create('x'));
    expect(made.size).toBe(4);
  });

  it('lets concurrent repeats wait for the first and share its result', async () => {
    const before = made.size;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow = async () => {
      await gate;
      return create('slow')();
    };
    const call = { subject: 'user:a', mutation: 'startWorkflow', key: 'k-2', input: { name: 'slow' } };
    const all = Promise.all([keys.run(call, codec, slow), keys.run(call, codec, slow), keys.run(call, codec, slow)]);
    await new Promise((r) => setTimeout(r, 200));
    release();
    const results = await all;
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect(made.size).toBe(before + 1);
  });

  it('releases the key when the mutation fails, and takes over a claim whose request died', async () => {
    const call = { subject: 'user:a', mutation: 'runTask', key: 'k-3', input: { prompt: 'p' } };
    await expect(keys.run(call, codec, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    const ok = await keys.run(call, codec, create('after-failure'));
    expect(ok.name).toBe('after-failure');

    // A claim left by a process that died before recording the result (claimed, no result).
    await dataSource.query('INSERT INTO idempotency_keys (subject, mutation, key, input_hash) VALUES ($1, $2, $3, $4)', ['user:a', 'runTask', 'k-4', inputHash({ prompt: 'q' })]);
    const waited = Date.now();
    const taken = await keys.run({ ...call, key: 'k-4', input: { prompt: 'q' } }, codec, create('taken-over'));
    expect(taken.name).toBe('taken-over');
    expect(Date.now() - waited).toBeGreaterThanOrEqual(200);
  });

  it('stores small answers whole, refuses a malformed key', async () => {
    const call = { subject: 'user:a', mutation: 'sendUserTurn', key: 'k-5', input: { text: 't' } };
    const turn = whole((j) => ({ ...(j as { turnId: string; at: string }), at: new Date((j as { at: string }).at) }));
    const first = await keys.run(call, turn, async () => ({ turnId: 't1', at: new Date(0) }));
    await expect(keys.run(call, turn, async () => ({ turnId: 't2', at: new Date(1) }))).resolves.toEqual(first);
    await expect(keys.run({ ...call, key: 'has space' }, turn, async () => ({ turnId: 't3', at: new Date() }))).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
  });
});
