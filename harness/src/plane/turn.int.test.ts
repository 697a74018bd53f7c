import { MeshError } from '@keelson/schema';
import { startPlaneBed, type PlaneBed } from '../../test/support/plane';
import { groupAlive } from '../process/groupProcess';
import type { TurnOptions, Turns } from './turn';

jest.setTimeout(60_000);

// Turns on their own: the lease, the CLI (a scripted node script), its output in the event log, the
// renewal that carries an interrupt flagged by another process, the timeout and the settlement.
describe('Turns', () => {
  let bed: PlaneBed;
  let turns: Turns;
  const opts = (text: string, extra: Partial<TurnOptions> = {}): TurnOptions => ({ text, attachments: [], allowTools: [], holder: 'test-holder', taskId: null, ...extra });

  beforeAll(async () => {
    bed = await startPlaneBed({ turnTimeoutMs: 6000 });
    turns = bed.turns;
  });
  afterAll(() => bed?.teardown());

  it('runs the CLI in the project, records its events and settles COMPLETED, the lease released', async () => {
    const record = await bed.session();
    const turn = await turns.start(record, bed.project.rootPath, opts('hello', { turnId: '1a2b3c4d-0000-4000-8000-000000000001' }));
    expect(turn.turnId).toBe('1a2b3c4d-0000-4000-8000-000000000001');
    expect(turns.list()).toEqual([{ turnId: turn.turnId, sessionId: record.id, pgid: turn.proc.pgid }]);
    const outcome = await turn.done;
    expect(outcome).toEqual({ sessionId: record.id, turnId: turn.turnId, status: 'COMPLETED', result: null, error: null });
    expect(turns.list()).toEqual([]);
    expect(await bed.eventTypes(record.id)).toEqual(['SESSION_CREATED', 'ASSISTANT_DELTA', 'TRANSCRIPT_APPENDED', 'TURN_COMPLETE']);
    const after = await bed.store.get(record.id);
    expect(after).toMatchObject({ turnId: null, announcedEntries: 2 });
  });

  it('refuses a second turn while one holds the session (TURN_IN_FLIGHT), then interrupts the first by its process group', async () => {
    const record = await bed.session();
    const first = await turns.start(record, bed.project.rootPath, opts('sleep a while'));
    const second = turns.start(record, bed.project.rootPath, opts('hello'));
    await expect(second).rejects.toMatchObject({ code: 'TURN_IN_FLIGHT' });
    expect(turns.ofSession(record.id)).toBe(first);
    expect(await turns.interruptSession(record)).toBe(true);
    expect(await first.done).toMatchObject({ status: 'INTERRUPTED', error: 'interrupted' });
    expect(groupAlive(first.proc.pgid)).toBe(false);
    expect(await turns.interruptSession(record)).toBe(false);
  });

  it('stops a turn another process flagged for interruption, carried by the lease renewal', async () => {
    const record = await bed.session();
    const turn = await turns.start(record, bed.project.rootPath, opts('sleep until flagged'));
    // What another process's interruptSession does: flag the holder of the lease.
    expect(await bed.store.requestInterrupt(record.id)).toMatchObject({ turnId: turn.turnId });
    expect(await turn.done).toMatchObject({ status: 'INTERRUPTED' });
  });

  it('stops a turn that runs past the timeout (FAILED, saying so)', async () => {
    const record = await bed.session();
    const turn = await turns.start(record, bed.project.rootPath, opts('sleep past the timeout'));
    const outcome = await turn.done;
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toBe('the turn ran longer than 6000 ms and was stopped');
    expect(turn.timedOut).toBe(true);
  });

  it('settles a turn whose CLI cannot start as FAILED and rethrows as UPSTREAM_FAILED', async () => {
    const record = await bed.session();
    const spawn = jest.spyOn(bed.driver, 'command').mockRejectedValueOnce(new Error('no such CLI'));
    try {
      const err = await turns.start(record, bed.project.rootPath, opts('hello')).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MeshError);
      expect(err).toMatchObject({ code: 'UPSTREAM_FAILED', message: 'hermes: the CLI could not be started (no such CLI)' });
    } finally {
      spawn.mockRestore();
    }
    expect((await bed.store.get(record.id))?.turnId).toBeNull();
    expect(await bed.eventTypes(record.id)).toEqual(['SESSION_CREATED', 'TURN_COMPLETE']);
  });

  it('follows a quick CLI from its start, whatever the database does while its process group is recorded', async () => {
    // Slow: the CLI exits and its output closes before the record is written; every line is still recorded.
    const slowly = await bed.session();
    const real = bed.store.setTurnPgid.bind(bed.store);
    const slow = jest.spyOn(bed.store, 'setTurnPgid').mockImplementationOnce(async (...args) => {
      await new Promise((r) => setTimeout(r, 1500));
      return real(...args);
    });
    try {
      const turn = await turns.start(slowly, bed.project.rootPath, opts('hello'));
      expect(await turn.done).toMatchObject({ status: 'COMPLETED', error: null });
    } finally {
      slow.mockRestore();
    }
    expect(await bed.eventTypes(slowly.id)).toEqual(['SESSION_CREATED', 'ASSISTANT_DELTA', 'TRANSCRIPT_APPENDED', 'TURN_COMPLETE']);

    // Failing: the turn runs on, followed and settled, its lease released.
    const failing = await bed.session();
    const broken = jest.spyOn(bed.store, 'setTurnPgid').mockRejectedValueOnce(new Error('connection lost'));
    try {
      const turn = await turns.start(failing, bed.project.rootPath, opts('hello'));
      expect(await turn.done).toMatchObject({ status: 'COMPLETED', error: null });
    } finally {
      broken.mockRestore();
    }
    expect(await bed.eventTypes(failing.id)).toEqual(['SESSION_CREATED', 'ASSISTANT_DELTA', 'TRANSCRIPT_APPENDED', 'TURN_COMPLETE']);
    expect(await bed.store.get(failing.id)).toMatchObject({ turnId: null });
  });

  it('ends a turn that was starting when stop() began, before stop() returns, and starts none after it', async () => {
    const own = bed.turnsOf(bed.drivers);
    const record = await bed.session();
    let spawning!: () => void;
    const reached = new Promise<void>((resolve) => (spawning = resolve));
    const real = bed.driver.command.bind(bed.driver);
    const slow = jest.spyOn(bed.driver, 'command').mockImplementationOnce(async (...args) => {
      spawning();
      await new Promise((r) => setTimeout(r, 500));
      return real(...args);
    });
    try {
      // A 30 s turn (the script's first 'sleep'), its lease taken and its CLI about to spawn when the process stops.
      const starting = own.start(record, bed.project.rootPath, opts('sleep through the shutdown'));
      await reached;
      await own.stop();
      expect(await bed.eventTypes(record.id)).toEqual(['SESSION_CREATED', 'TURN_COMPLETE']);
      expect(await bed.store.get(record.id)).toMatchObject({ turnId: null });
      const turn = await starting;
      expect(await turn.done).toMatchObject({ status: 'INTERRUPTED' });
      expect(groupAlive(turn.proc.pgid)).toBe(false);
    } finally {
      slow.mockRestore();
    }
    await expect(own.start(await bed.session(), bed.project.rootPath, opts('hello'))).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
  });

  it('records a turn whose holder stopped renewing as LOST when the next turn takes the lease', async () => {
    const record = await bed.session();
    await bed.store.acquireTurn(record.id, '1a2b3c4d-0000-4000-8000-00000000dead', 'a crashed process', 1);
    await new Promise((r) => setTimeout(r, 20));
    const outcome = await (await turns.start(record, bed.project.rootPath, opts('hello'))).done;
    expect(outcome.status).toBe('COMPLETED');
    expect(await bed.eventTypes(record.id)).toEqual(['SESSION_CREATED', 'TURN_COMPLETE', 'ASSISTANT_DELTA', 'TRANSCRIPT_APPENDED', 'TURN_COMPLETE']);
  });
});
