import type { DriverFeatures } from '../drivers/cliDriver';
import { ScriptedHermesDriver } from '../../../test/support/scriptedDriver';
import { startPlaneBed, type PlaneBed } from '../../test/support/plane';
import { Tasks } from './tasks';
import type { TurnControl, Turns } from './turn';

jest.setTimeout(60_000);

/** The scripted CLI as a harness that mints its own session ids (as codex and opencode do). */
class MintingDriver extends ScriptedHermesDriver {
  override readonly features: DriverFeatures = { pinning: 'none', approvals: false, attachments: false, reasons: {} };
}

const control = (beats: unknown[] = [], signal = new AbortController().signal): TurnControl => ({ attempt: 1, signal, heartbeat: (d) => beats.push(d) });

// Tasks on their own: created with a pinned session or none, one turn per attempt under the task's
// lease, the CLI's announced session recorded, cancellation, and the settled status.
describe('Tasks', () => {
  let bed: PlaneBed;
  let turns: Turns;
  let tasks: Tasks;

  beforeAll(async () => {
    bed = await startPlaneBed();
    turns = bed.turns;
    tasks = new Tasks({ store: bed.store, drivers: bed.drivers, settings: bed.settings, places: bed.places, turns });
  });
  afterAll(() => bed?.teardown());

  it('refuses a task without a project, and one in a project that does not exist', async () => {
    await expect(tasks.create({ harnessId: 'hermes', prompt: 'hi', projectId: null })).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
    await expect(tasks.create({ harnessId: 'hermes', prompt: 'hi', projectId: '00000000-0000-4000-8000-000000000000' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(tasks.create({ harnessId: 'grok-build', prompt: 'hi', projectId: bed.project.id })).rejects.toMatchObject({ code: 'CAPABILITY_UNSUPPORTED' });
  });

  it('pins the session of a pinning harness at creation, runs its turn with heartbeats and settles it', async () => {
    const task = await tasks.create({ harnessId: 'hermes', prompt: 'hello task', projectId: bed.project.id });
    expect(task.sessionId).toMatch(/^hermes:/);
    expect(await bed.store.get(task.sessionId!)).toMatchObject({ origin: 'task', taskId: task.id, cwd: bed.project.rootPath });
    const beats: unknown[] = [];
    const outcome = await tasks.runTurn(task.id, control(beats));
    expect(outcome).toMatchObject({ sessionId: task.sessionId, status: 'COMPLETED' });
    expect(await tasks.settle(task.id, outcome)).toMatchObject({ status: 'SUCCEEDED' });
    // A settled task answers a later attempt with how it ended, without running anything.
    expect(await tasks.runTurn(task.id, control())).toEqual({ sessionId: task.sessionId, turnId: '', status: 'COMPLETED', result: null, error: null });
    expect(await tasks.settle(task.id, { status: 'FAILED', error: 'too late' })).toMatchObject({ status: 'SUCCEEDED', error: null });
  });

  it('records the session a minting CLI announces, under the task', async () => {
    const minting = new MintingDriver(bed.settings);
    const drivers = { ...bed.drivers, hermes: minting };
    const mintingTurns = bed.turnsOf(drivers);
    const mintingTasks = new Tasks({ store: bed.store, drivers, settings: bed.settings, places: bed.places, turns: mintingTurns });
    const task = await mintingTasks.create({ harnessId: 'hermes', prompt: 'hello minted', projectId: bed.project.id });
    expect(task.sessionId).toBeNull();
    const outcome = await mintingTasks.runTurn(task.id, control());
    expect(outcome.status).toBe('COMPLETED');
    expect((await bed.store.task(task.id))?.sessionId).toBe(outcome.sessionId);
    expect(await bed.store.get(outcome.sessionId!)).toMatchObject({ origin: 'task', taskId: task.id, turnId: null });
    expect(await bed.eventTypes(outcome.sessionId!)).toEqual(['SESSION_CREATED', 'ASSISTANT_DELTA', 'TRANSCRIPT_APPENDED', 'TURN_COMPLETE']);
  });

  it('interrupts a running task turn by its cancellation signal and by interrupt()', async () => {
    const aborted = await tasks.create({ harnessId: 'hermes', prompt: 'sleep until cancelled', projectId: bed.project.id });
    const ac = new AbortController();
    const running = tasks.runTurn(aborted.id, control([], ac.signal));
    await waitFor(() => turns.list().some((t) => t.sessionId === aborted.sessionId));
    ac.abort();
    expect(await running).toMatchObject({ status: 'INTERRUPTED' });
    expect(await tasks.settle(aborted.id, await running)).toMatchObject({ status: 'CANCELLED' });

    const stopped = await tasks.create({ harnessId: 'hermes', prompt: 'sleep until interrupted', projectId: bed.project.id });
    const second = tasks.runTurn(stopped.id, control());
    await waitFor(() => turns.list().some((t) => t.sessionId === stopped.sessionId));
    expect(await tasks.interrupt(stopped.id)).toBe(true);
    expect(await second).toMatchObject({ status: 'INTERRUPTED' });
    expect(await tasks.interrupt(stopped.id)).toBe(false);
  });
});

async function waitFor(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !cond(); i++) await new Promise((r) => setTimeout(r, 25));
  if (!cond()) throw new Error('condition not met in 10 s');
}
