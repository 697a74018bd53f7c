import { startPlaneBed, type PlaneBed } from '../../test/support/plane';
import { Steering } from './steering';
import type { TurnControl, Turns } from './turn';

jest.setTimeout(60_000);

const control = (): TurnControl => ({ attempt: 1, signal: new AbortController().signal, heartbeat: () => undefined });

// Steering on its own: a steer runs once as the session's turn with the steer's id, and a steer
// whose turn already left a trace is answered from it, never run twice.
describe('Steering', () => {
  let bed: PlaneBed;
  let turns: Turns;
  let steering: Steering;

  beforeAll(async () => {
    bed = await startPlaneBed();
    turns = bed.turns;
    steering = new Steering({ store: bed.store, places: bed.places, turns });
  });
  afterAll(() => bed?.teardown());

  it('runs a steer as the turn with its id, and answers its retry from the recorded outcome', async () => {
    const record = await bed.session();
    const steerId = '2b3c4d5e-0000-4000-8000-000000000001';
    const outcome = await steering.runTurn(record, { steerId, text: 'steer one' }, control());
    expect(outcome).toEqual({ sessionId: record.id, turnId: steerId, status: 'COMPLETED', result: null, error: null });
    const events = await bed.eventTypes(record.id);
    expect(await steering.runTurn((await bed.store.get(record.id))!, { steerId, text: 'steer one' }, control())).toEqual(outcome);
    expect(await bed.eventTypes(record.id)).toEqual(events);
  });

  it('answers a steer whose holder died mid-turn as LOST, and refuses one still held', async () => {
    const record = await bed.session();
    const steerId = '2b3c4d5e-0000-4000-8000-000000000002';
    const { record: held } = await bed.store.acquireTurn(record.id, steerId, 'a live worker', 60_000);
    await expect(steering.runTurn(held, { steerId, text: 'x' }, control())).rejects.toMatchObject({ code: 'TURN_IN_FLIGHT' });
    const { record: dying } = await bed.store.acquireTurn((await bed.session()).id, steerId, 'a crashed worker', 1);
    await new Promise((r) => setTimeout(r, 20));
    const lost = await steering.runTurn(dying, { steerId, text: 'x' }, control());
    expect(lost).toMatchObject({ status: 'LOST', error: 'the process running this steer stopped renewing its lease; the steer is not run again' });
    expect(await bed.eventTypes(dying.id)).toEqual(['SESSION_CREATED', 'TURN_COMPLETE']);
  });
});
