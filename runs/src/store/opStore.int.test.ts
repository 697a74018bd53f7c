import type { DomainState } from '@keelson/platform';
import { randomUUID } from 'node:crypto';
import { runLimits, streams } from '@keelson/schema';
import { openTestDomainState } from '../../../test/support/domainState';
import { RUNS_MIGRATIONS_TABLE, runsMigrations } from '../migrations';
import { OpStore, type NewOp } from './opStore';

/** OpStore on real Postgres: the op's row and the `ops` frames each call commits, once where it says once. */
describe('OpStore', () => {
  let state: DomainState;
  let store: OpStore;

  beforeAll(async () => {
    state = await openTestDomainState(runsMigrations, RUNS_MIGRATIONS_TABLE);
    store = new OpStore(state.dataSource, state.events);
  });
  afterAll(() => state?.close());

  const sql = <T>(text: string, params: unknown[] = []) => state.dataSource.query(text, params) as Promise<T[]>;
  const frames = (opId: string) =>
    sql<{ type: string; payload: Record<string, unknown>; actor: unknown }>('SELECT type, payload, actor FROM events WHERE stream = $1 AND key = $2 ORDER BY seq', [
      streams.ops,
      opId,
    ]);
  const opRow = async (opId: string) =>
    (await sql<{ status: string; result: unknown; error: string | null; began_at: Date | null; completed_at: Date | null }>('SELECT * FROM ops WHERE id = $1', [opId]))[0]!;

  async function newOp(over: Partial<NewOp> = {}): Promise<string> {
    const id = randomUUID();
    await store.createOp({ id, kind: 'index', title: 'Index it', input: { path: '/x' }, ribId: null, projectId: null, steerable: false, temporalWorkflowId: `op-${id}`, ...over });
    return id;
  }

  it('creates an op RUNNING and reads it back whole; an unknown op is null', async () => {
    const projectId = randomUUID();
    const id = await newOp({ ribId: 'rib-1', projectId, steerable: true, title: null });
    expect(await store.getOp(id)).toEqual({
      id,
      kind: 'index',
      title: null,
      input: { path: '/x' },
      status: 'RUNNING',
      steerable: true,
      ribId: 'rib-1',
      projectId,
      temporalWorkflowId: `op-${id}`,
    });
    expect(await frames(id)).toEqual([]);
    expect(await store.getOp(randomUUID())).toBeNull();
    const none = await newOp({ input: undefined });
    expect((await store.getOp(none))!.input).toBeNull();
  });

  it('begins an op with OP_STARTED once and returns it', async () => {
    const id = await newOp();
    expect((await opRow(id)).began_at).toBeNull();
    expect(await store.beginOp(id)).toMatchObject({ id, status: 'RUNNING' });
    const began = (await opRow(id)).began_at;
    expect(began).toBeInstanceOf(Date);
    expect(await store.beginOp(id)).toMatchObject({ id, status: 'RUNNING' });
    expect((await opRow(id)).began_at).toEqual(began);
    expect(await frames(id)).toEqual([{ type: 'OP_STARTED', payload: { opId: id }, actor: null }]);
    const missing = randomUUID();
    await expect(store.beginOp(missing)).rejects.toMatchObject({ code: 'NOT_FOUND', message: `op "${missing}" does not exist` });
  });

  it('appends log lines cut to the line limit with NUL made printable', async () => {
    const id = await newOp();
    await store.log(id, 'hello\u0000');
    await store.log(id, 'l'.repeat(runLimits.opLineChars + 1));
    await store.log(id, 'k'.repeat(runLimits.opLineChars));
    expect((await frames(id)).map((f) => [f.type, f.payload])).toEqual([
      ['OP_LOG', { opId: id, line: 'hello\uFFFD' }],
      ['OP_LOG', { opId: id, line: `${'l'.repeat(runLimits.opLineChars - 1)}…` }],
      ['OP_LOG', { opId: id, line: 'k'.repeat(runLimits.opLineChars) }],
    ]);
  });

  it('appends progress with the fraction clamped to 0…1 and only the fields given', async () => {
    const id = await newOp();
    await store.progress(id, { fraction: 1.5 });
    await store.progress(id, { fraction: -0.25, message: `${'m'.repeat(600)}` });
    await store.progress(id, { fraction: 0.5, message: 'half\u0000' });
    await store.progress(id, { message: 'no fraction' });
    await store.progress(id, {});
    expect((await frames(id)).map((f) => f.payload)).toEqual([
      { opId: id, fraction: 1 },
      { opId: id, fraction: 0, message: `${'m'.repeat(499)}…` },
      { opId: id, fraction: 0.5, message: 'half\uFFFD' },
      { opId: id, message: 'no fraction' },
      { opId: id },
    ]);
    expect(new Set((await frames(id)).map((f) => f.type))).toEqual(new Set(['OP_PROGRESS']));
  });

  it('records each steer index once, with its note and sender', async () => {
    const id = await newOp({ steerable: true });
    const actor = { subject: 'user:ada', kind: 'jwt' as const };
    await store.recordSteer(id, 0, 'left\u0000', actor);
    await store.recordSteer(id, 0, 'left again', actor);
    await store.recordSteer(id, 1, 'right');
    expect(await sql('SELECT idx, note FROM op_steers WHERE op_id = $1 ORDER BY idx', [id])).toEqual([
      { idx: 0, note: 'left\uFFFD' },
      { idx: 1, note: 'right' },
    ]);
    expect(await frames(id)).toEqual([
      { type: 'OP_STEERED', payload: { opId: id, note: 'left\uFFFD' }, actor },
      { type: 'OP_STEERED', payload: { opId: id, note: 'right' }, actor: null },
    ]);
  });

  it('completes an op once with its result and OP_SUCCEEDED; a settled op stays settled', async () => {
    const id = await newOp();
    expect(await store.completeOp(id, { n: 1 })).toBe(true);
    expect(await store.completeOp(id, { n: 2 })).toBe(false);
    expect(await store.settleOp(id, 'FAILED', 'late')).toBe(false);
    const row = await opRow(id);
    expect(row).toMatchObject({ status: 'SUCCEEDED', result: { n: 1 }, error: null });
    expect(row.completed_at).toBeInstanceOf(Date);
    expect(await frames(id)).toEqual([{ type: 'OP_SUCCEEDED', payload: { opId: id }, actor: null }]);

    const empty = await newOp();
    await store.completeOp(empty, undefined);
    expect((await opRow(empty)).result).toBeNull();
  });

  it('keeps a result of exactly the limit and refuses a larger one with BAD_USER_INPUT, changing nothing', async () => {
    const limit = runLimits.opResultBytes;
    const fits = await newOp();
    expect(await store.completeOp(fits, 'a'.repeat(limit - 2))).toBe(true); // the JSON string's two quotes
    const big = await newOp();
    await expect(store.completeOp(big, 'a'.repeat(limit - 1))).rejects.toMatchObject({
      code: 'BAD_USER_INPUT',
      message: `op ${big}: the result is ${limit + 1} bytes of JSON; at most ${limit} are kept`,
    });
    expect((await opRow(big)).status).toBe('RUNNING');
    expect(await frames(big)).toEqual([]);
  });

  it('settles an op FAILED or CANCELLED once, the error clipped in its frame', async () => {
    const failed = await newOp();
    const error = `${'e'.repeat(600)}\u0000`;
    expect(await store.settleOp(failed, 'FAILED', error)).toBe(true);
    expect(await store.settleOp(failed, 'CANCELLED')).toBe(false);
    expect(await store.completeOp(failed, 1)).toBe(false);
    expect(await opRow(failed)).toMatchObject({ status: 'FAILED', error: `${'e'.repeat(600)}\uFFFD`, result: null });
    expect((await opRow(failed)).completed_at).toBeInstanceOf(Date);
    expect(await frames(failed)).toEqual([{ type: 'OP_FAILED', payload: { opId: failed, error: `${'e'.repeat(499)}…` }, actor: null }]);

    const cancelled = await newOp();
    expect(await store.settleOp(cancelled, 'CANCELLED')).toBe(true);
    expect(await opRow(cancelled)).toMatchObject({ status: 'CANCELLED', error: null });
    expect(await frames(cancelled)).toEqual([{ type: 'OP_CANCELLED', payload: { opId: cancelled }, actor: null }]);
  });

  it('failToStart fails the op with the reason', async () => {
    const id = await newOp();
    await store.failToStart(id, 'no worker');
    expect(await opRow(id)).toMatchObject({ status: 'FAILED', error: 'the op could not start: no worker' });
    expect(await frames(id)).toEqual([{ type: 'OP_FAILED', payload: { opId: id, error: 'the op could not start: no worker' }, actor: null }]);
  });

  /** Holds the op's row lock on a connection of its own until `release()`; `pid` is that backend's. */
  async function holdOpRow(opId: string): Promise<{ pid: number; release: () => Promise<void> }> {
    const runner = state.dataSource.createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    const [{ pid }] = (await runner.query('SELECT pg_backend_pid() AS pid')) as [{ pid: number }];
    await runner.query('SELECT 1 FROM ops WHERE id = $1 FOR UPDATE', [opId]);
    return {
      pid,
      release: async () => {
        await runner.commitTransaction();
        await runner.release();
      },
    };
  }

  /** Waits until `n` other backends wait for a lock. */
  async function lockWaiters(n: number, holder: number): Promise<void> {
    for (let i = 0; i < 200; i++) {
      const [row] = await sql<{ n: string }>(
        "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> $1",
        [holder],
      );
      if (Number(row!.n) >= n) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`${n} backends never waited for a lock`);
  }

  it('begins an op once when two begins race: the second reads the row after the first commits', async () => {
    const id = await newOp();
    // Both begins start while the row is locked elsewhere, so both are in flight before either reads
    // began_at; the first to get the row begins the op, the other must see that it did.
    const holder = await holdOpRow(id);
    const begins = [store.beginOp(id), store.beginOp(id)];
    await lockWaiters(2, holder.pid);
    await holder.release();
    expect(await Promise.all(begins)).toEqual([expect.objectContaining({ id }), expect.objectContaining({ id })]);
    expect(await frames(id)).toEqual([{ type: 'OP_STARTED', payload: { opId: id }, actor: null }]);
  });

  it('reads an op without waiting for a transaction that holds its row', async () => {
    const id = await newOp({ title: 'held' });
    const holder = await holdOpRow(id);
    try {
      const read = store.getOp(id).then((op) => op?.title);
      const waited = new Promise((r) => setTimeout(() => r('still waiting'), 2_000));
      expect(await Promise.race([read, waited])).toBe('held');
    } finally {
      await holder.release();
    }
  });
});
