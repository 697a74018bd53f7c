import { defaultPgTimeouts, silentLogger } from '@keelson/service';
import type { DataSource, EntityManager } from 'typeorm';
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

  const userA = { kind: 'jwt' as const, subject: 'a' };

  it('runs the mutation once per key: a repeat with the same input gets the original, another input is CONFLICT', async () => {
    const call = { caller: userA, mutation: 'createProject', key: 'k-1', input: { name: 'x', rootPath: null } };
    const first = await keys.run(call, codec, create('x'));
    const again = await keys.run({ ...call, input: { rootPath: null, name: 'x' } }, codec, create('x'));
    expect(again).toEqual(first);
    expect(made.size).toBe(1);
    await expect(keys.run({ ...call, input: { name: 'y' } }, codec, create('y'))).rejects.toMatchObject({ code: 'CONFLICT' });
    // Keys are per caller and per mutation.
    await keys.run({ ...call, caller: { kind: 'jwt', subject: 'b' } }, codec, create('x'));
    await keys.run({ ...call, mutation: 'cloneProject' }, codec, create('x'));
    expect(made.size).toBe(3);
    // Without a key every call runs.
    await keys.run({ ...call, key: null }, codec, create('x'));
    expect(made.size).toBe(4);
  });

  it('keys callers by a stable id, not a name: two tokens named alike, or a JWT whose sub reads like a token, never share a result', async () => {
    const call = { mutation: 'createProject', key: 'k-stable', input: { name: 'same' } };
    const tokenOne = { kind: 'token' as const, subject: 'token:ci', tokenId: '00000000-0000-4000-8000-000000000001' };
    const first = await keys.run({ ...call, caller: tokenOne }, codec, create('same'));
    const before = made.size;
    const results = [
      await keys.run({ ...call, caller: { ...tokenOne, tokenId: '00000000-0000-4000-8000-000000000002' } }, codec, create('same')),
      await keys.run({ ...call, caller: { kind: 'jwt', subject: 'token:ci' } }, codec, create('same')),
      await keys.run({ ...call, caller: { kind: 'service', subject: 'token:ci' } }, codec, create('same')),
    ];
    expect(made.size).toBe(before + 3);
    expect(new Set([first, ...results].map((r) => JSON.stringify(r))).size).toBe(4);
    // The same token (renamed since) still gets its own result back.
    await expect(keys.run({ ...call, caller: { ...tokenOne, subject: 'token:renamed' } }, codec, create('same'))).resolves.toEqual(first);
  });

  it('lets concurrent repeats wait for the first and share its result', async () => {
    const before = made.size;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow = async () => {
      await gate;
      return create('slow')();
    };
    const call = { caller: userA, mutation: 'startWorkflow', key: 'k-2', input: { name: 'slow' } };
    // A lease far beyond the gate: a loaded machine must not make the first request look dead.
    const patient = new IdempotencyKeys(dataSource, { claimLeaseMs: 60_000, waitMs: 10_000 });
    const all = Promise.all([patient.run(call, codec, slow), patient.run(call, codec, slow), patient.run(call, codec, slow)]);
    await new Promise((r) => setTimeout(r, 200));
    release();
    const results = await all;
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect(made.size).toBe(before + 1);
  });

  it('releases the key when the mutation fails, and takes over a claim whose request died', async () => {
    const call = { caller: userA, mutation: 'runTask', key: 'k-3', input: { prompt: 'p' } };
    await expect(keys.run(call, codec, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await dataSource.query('SELECT 1 FROM idempotency_keys WHERE key = $1', ['k-3'])).toEqual([]);
    const ok = await keys.run(call, codec, create('after-failure'));
    expect(ok.name).toBe('after-failure');

    // A claim left by a process that died before recording the result (claimed, no result).
    await dataSource.query('INSERT INTO idempotency_keys (subject, mutation, key, input_hash) VALUES ($1, $2, $3, $4)', ['jwt:a', 'runTask', 'k-4', inputHash({ prompt: 'q' })]);
    const waited = Date.now();
    const taken = await keys.run({ ...call, key: 'k-4', input: { prompt: 'q' } }, codec, create('taken-over'));
    expect(taken.name).toBe('taken-over');
    expect(Date.now() - waited).toBeGreaterThanOrEqual(200);
  });

  it('stores small answers whole, refuses a malformed key', async () => {
    const call = { caller: userA, mutation: 'sendUserTurn', key: 'k-5', input: { text: 't' } };
    const turn = whole((j) => ({ ...(j as { turnId: string; at: string }), at: new Date((j as { at: string }).at) }));
    const first = await keys.run(call, turn, async () => ({ turnId: 't1', at: new Date(0) }));
    await expect(keys.run(call, turn, async () => ({ turnId: 't2', at: new Date(1) }))).resolves.toEqual(first);
    await expect(keys.run({ ...call, key: 'has space' }, turn, async () => ({ turnId: 't3', at: new Date() }))).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
  });

  it('names the key and the mutation when a repeat has another input, or what it made is gone', async () => {
    const call = { caller: userA, mutation: 'createProject', key: 'k-msg', input: { name: 'm' } };
    await keys.run(call, codec, create('m'));
    await expect(keys.run({ ...call, input: { name: 'n' } }, codec, create('n'))).rejects.toMatchObject({
      code: 'CONFLICT',
      message: 'idempotencyKey "k-msg" was used for createProject with a different input',
    });
    const forgetful = byId(async () => null);
    await expect(keys.run(call, forgetful, create('m'))).rejects.toMatchObject({
      code: 'CONFLICT',
      message: 'idempotencyKey "k-msg": what createProject made with it no longer exists',
    });
    await expect(keys.run({ ...call, key: '' }, codec, create('m'))).rejects.toMatchObject({ code: 'BAD_USER_INPUT', message: 'idempotencyKey: must be 1 to 200 characters' });
  });

  it('gives up waiting for a first request still running after waitMs: CONFLICT, the first one goes on', async () => {
    const impatient = new IdempotencyKeys(dataSource, { claimLeaseMs: 60_000, waitMs: 300 });
    const call = { caller: userA, mutation: 'startWorkflow', key: 'k-wait', input: { name: 'w' } };
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const first = impatient.run(call, codec, async () => {
      await gate;
      return create('w')();
    });
    await new Promise((r) => setTimeout(r, 50));
    const asked = Date.now();
    await expect(impatient.run(call, codec, create('w'))).rejects.toMatchObject({
      code: 'CONFLICT',
      message: 'idempotencyKey "k-wait": the first startWorkflow with it is still running; retry later',
    });
    expect(Date.now() - asked).toBeGreaterThanOrEqual(300);
    expect(Date.now() - asked).toBeLessThan(5_000);
    release();
    const made1 = await first;
    await expect(impatient.run(call, codec, create('w'))).resolves.toEqual(made1);
  });

  describe('runInTransaction: the claim commits with the mutation\'s own writes', () => {
    /** A created row the mutation inserts in the claim's transaction; the test reads them back. */
    const rowsOf = async (name: string) => (await dataSource.query('SELECT id::text FROM idem_made WHERE name = $1', [name])) as { id: string }[];
    const insert = (name: string) => async (m: EntityManager) => {
      const [row] = (await m.query('INSERT INTO idem_made (name) VALUES ($1) RETURNING id::text, name', [name])) as { id: string; name: string }[];
      return row!;
    };
    const fromTable = byId(async (id) => ((await dataSource.query('SELECT id::text, name FROM idem_made WHERE id = $1', [id])) as { id: string; name: string }[])[0] ?? null);
    let lasting: IdempotencyKeys;

    beforeAll(async () => {
      await dataSource.query('CREATE TABLE IF NOT EXISTS idem_made (id serial PRIMARY KEY, name text NOT NULL)');
      // The default lease (120 s): a test that finishes in seconds proves no lease is waited out.
      lasting = new IdempotencyKeys(dataSource, { waitMs: 2_000 });
    });

    it('runs once per key: the same input gets the original row, another input is CONFLICT, no key runs each time', async () => {
      const call = { caller: userA, mutation: 'createProject', key: 'tx-1', input: { name: 'tx-one' } };
      const first = await lasting.runInTransaction(call, fromTable, insert('tx-one'));
      await expect(lasting.runInTransaction(call, fromTable, insert('tx-one'))).resolves.toEqual(first);
      await expect(lasting.runInTransaction({ ...call, input: { name: 'other' } }, fromTable, insert('other'))).rejects.toMatchObject({ code: 'CONFLICT' });
      expect(await rowsOf('tx-one')).toHaveLength(1);
      await lasting.runInTransaction({ ...call, key: null }, fromTable, insert('tx-one'));
      expect(await rowsOf('tx-one')).toHaveLength(2);
      await expect(lasting.runInTransaction({ ...call, key: 'has space' }, fromTable, insert('x'))).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
    });

    it('a failed mutation leaves neither its rows nor the claim', async () => {
      const call = { caller: userA, mutation: 'createProject', key: 'tx-2', input: { name: 'tx-two' } };
      const failing = async (m: EntityManager) => {
        await insert('tx-two')(m);
        throw new Error('boom after the insert');
      };
      await expect(lasting.runInTransaction(call, fromTable, failing)).rejects.toThrow('boom after the insert');
      expect(await rowsOf('tx-two')).toEqual([]);
      expect(await dataSource.query('SELECT 1 FROM idempotency_keys WHERE key = $1', ['tx-2'])).toEqual([]);
      await lasting.runInTransaction(call, fromTable, insert('tx-two'));
      expect(await rowsOf('tx-two')).toHaveLength(1);
    });

    it('concurrent repeats wait on the first one\'s claim and share its row; past waitMs they are CONFLICT', async () => {
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const slow = async (m: EntityManager) => {
        await gate;
        return insert('tx-three')(m);
      };
      const call = { caller: userA, mutation: 'createProject', key: 'tx-3', input: { name: 'tx-three' } };
      const first = lasting.runInTransaction(call, fromTable, slow);
      await new Promise((r) => setTimeout(r, 100));
      const repeats = [lasting.runInTransaction(call, fromTable, slow), lasting.runInTransaction(call, fromTable, slow)];
      await new Promise((r) => setTimeout(r, 300));
      release();
      const results = await Promise.all([first, ...repeats]);
      expect(new Set(results.map((r) => r.id)).size).toBe(1);
      expect(await rowsOf('tx-three')).toHaveLength(1);

      let never!: () => void;
      const held = lasting.runInTransaction({ ...call, key: 'tx-4' }, fromTable, async (m) => {
        await new Promise<void>((r) => (never = r));
        return insert('tx-four')(m);
      });
      await new Promise((r) => setTimeout(r, 100));
      const asked = Date.now();
      await expect(lasting.runInTransaction({ ...call, key: 'tx-4' }, fromTable, insert('tx-four'))).rejects.toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('still running') });
      expect(Date.now() - asked).toBeGreaterThanOrEqual(1_900);
      never();
      await held;
      expect(await rowsOf('tx-four')).toHaveLength(1);
    });

    it('a connection lost between the claim and the result frees the key at once (no 120 s lease)', async () => {
      const call = { caller: userA, mutation: 'createProject', key: 'tx-5', input: { name: 'tx-five' } };
      let claimedBy!: (pid: number) => void;
      const backend = new Promise<number>((r) => (claimedBy = r));
      let goOn!: () => void;
      const afterwards = new Promise<void>((r) => (goOn = r));
      const dying = lasting.runInTransaction(call, fromTable, async (m) => {
        await insert('tx-five')(m);
        const [{ pid }] = (await m.query('SELECT pg_backend_pid() AS pid')) as { pid: number }[];
        claimedBy(pid);
        await afterwards;
        return insert('never')(m);
      });
      const pid = await backend;
      // What a crash of the mesh looks like from Postgres: the claim's connection goes away mid-transaction.
      await dataSource.query('SELECT pg_terminate_backend($1)', [pid]);
      const retried = Date.now();
      const row = await lasting.runInTransaction(call, fromTable, insert('tx-five'));
      expect(Date.now() - retried).toBeLessThan(5_000);
      expect(await rowsOf('tx-five')).toEqual([{ id: row.id }]);
      await expect(lasting.runInTransaction(call, fromTable, insert('tx-five'))).resolves.toEqual(row);
      goOn();
      await expect(dying).rejects.toThrow();
      expect(await rowsOf('never')).toEqual([]);
    });

    it('takes over a result-less claim `run` left behind for the same input, refuses one for another input', async () => {
      await dataSource.query('INSERT INTO idempotency_keys (subject, mutation, key, input_hash) VALUES ($1, $2, $3, $4)', ['jwt:a', 'createProject', 'tx-6', inputHash({ name: 'tx-six' })]);
      const call = { caller: userA, mutation: 'createProject', key: 'tx-6', input: { name: 'tx-six' } };
      await expect(lasting.runInTransaction(call, fromTable, insert('tx-six'))).resolves.toMatchObject({ name: 'tx-six' });
      await dataSource.query('INSERT INTO idempotency_keys (subject, mutation, key, input_hash) VALUES ($1, $2, $3, $4)', ['jwt:a', 'createProject', 'tx-7', inputHash({ name: 'x' })]);
      await expect(lasting.runInTransaction({ ...call, key: 'tx-7' }, fromTable, insert('tx-seven'))).rejects.toMatchObject({ code: 'CONFLICT' });
    });

    it('names the key and the mutation when a repeat has another input', async () => {
      const call = { caller: userA, mutation: 'createProject', key: 'tx-msg', input: { name: 'tx-msg' } };
      await lasting.runInTransaction(call, fromTable, insert('tx-msg'));
      await expect(lasting.runInTransaction({ ...call, input: { name: 'other' } }, fromTable, insert('other'))).rejects.toMatchObject({
        code: 'CONFLICT',
        message: 'idempotencyKey "tx-msg" was used for createProject with a different input',
      });
    });

    it('bounds only the wait for the claim: the mutation\'s own lock waits may outlast waitMs', async () => {
      const quick = new IdempotencyKeys(dataSource, { waitMs: 200 });
      const holder = dataSource.createQueryRunner();
      await holder.connect();
      try {
        await holder.query('SELECT pg_advisory_lock(7301)');
        const call = { caller: userA, mutation: 'createProject', key: 'tx-lock', input: { name: 'tx-lock' } };
        const running = quick.runInTransaction(call, fromTable, async (m) => {
          await m.query('SELECT pg_advisory_xact_lock(7301)');
          return insert('tx-lock')(m);
        });
        await new Promise((r) => setTimeout(r, 600));
        await holder.query('SELECT pg_advisory_unlock(7301)');
        await expect(running).resolves.toMatchObject({ name: 'tx-lock' });
      } finally {
        await holder.release();
      }
    });

    it('a statement_timeout shorter than waitMs ends the wait for the claim as CONFLICT too', async () => {
      const { dataSource: bounded } = createDataSource({
        url: db.url,
        entities: [],
        migrations: [],
        migrationsTableName: 'idem_migrations',
        log: silentLogger(),
        pg: { ...defaultPgTimeouts, statementTimeoutMs: 300 },
      });
      await bounded.initialize();
      try {
        const hurried = new IdempotencyKeys(bounded, { waitMs: 5_000 });
        let release!: () => void;
        const gate = new Promise<void>((r) => (release = r));
        const call = { caller: userA, mutation: 'createProject', key: 'tx-timeout', input: { name: 'tx-timeout' } };
        const first = lasting.runInTransaction(call, fromTable, async (m) => {
          await gate;
          return insert('tx-timeout')(m);
        });
        await new Promise((r) => setTimeout(r, 100));
        const asked = Date.now();
        await expect(hurried.runInTransaction(call, fromTable, insert('tx-timeout'))).rejects.toMatchObject({
          code: 'CONFLICT',
          message: 'idempotencyKey "tx-timeout": the first createProject with it is still running; retry later',
        });
        expect(Date.now() - asked).toBeLessThan(4_000);
        release();
        await first;
        expect(await rowsOf('tx-timeout')).toHaveLength(1);
      } finally {
        await bounded.destroy();
      }
    });

    it('any other failure of the claim reaches the caller as it is, not as "still running"', async () => {
      // A trigger that refuses one key: the claim's INSERT fails with an error no lock wait gives.
      await dataSource.query(`CREATE FUNCTION idem_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.key = 'tx-refused' THEN RAISE EXCEPTION 'refused by the test' USING ERRCODE = 'check_violation'; END IF; RETURN NEW; END $$`);
      await dataSource.query('CREATE TRIGGER idem_refuse BEFORE INSERT ON idempotency_keys FOR EACH ROW EXECUTE FUNCTION idem_refuse()');
      try {
        const call = { caller: userA, mutation: 'createProject', key: 'tx-refused', input: { name: 'tx-refused' } };
        await expect(lasting.runInTransaction(call, fromTable, insert('tx-refused'))).rejects.toMatchObject({ message: 'refused by the test', code: '23514' });
        expect(await rowsOf('tx-refused')).toHaveLength(0);
      } finally {
        await dataSource.query('DROP TRIGGER idem_refuse ON idempotency_keys');
        await dataSource.query('DROP FUNCTION idem_refuse()');
      }
    });
  });
});
