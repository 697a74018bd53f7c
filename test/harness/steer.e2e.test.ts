import { sessionSteerLimits } from '@keelson/schema';
import { connectClient } from '@keelson/temporal';
import { gql, gqlData } from '../support/client';
import { codes, createProject, SESSION_FIELDS, sendTurn, subscribeEvents, takeUntil, turnCompleted, waitIdle, type Ev, type HarnessMesh, type SessionData, startHarnessMesh } from '../support/harness';
import { testTemporalAddress } from '../support/temporalServer';

jest.setTimeout(240_000);

// steerSession through the gateway against a real CLI (pi) and the local model server: no driver
// takes input mid-turn, so a steer is QUEUED in the session's sessionSteer workflow and runs, in
// order, as the session's next turn once the running one ends.
let h: HarnessMesh;
beforeAll(async () => {
  h = await startHarnessMesh();
});
afterAll(() => h?.teardown());

const STEER = `mutation ($s: ID!, $t: String!, $k: String) { steerSession(sessionId: $s, text: $t, idempotencyKey: $k) { accepted status reason } }`;

interface SteerData {
  accepted: boolean;
  status: string;
  reason: string | null;
}

async function steer(sessionId: string, text: string, key?: string): Promise<SteerData> {
  return (await gqlData<{ steerSession: SteerData }>(h.mesh.gatewayUrl, STEER, { s: sessionId, t: text, k: key ?? null })).steerSession;
}

/** The assistant's text of each turn, in turn order (turn id → joined deltas). */
function turnsOf(events: Ev[]): { turnId: string; text: string; status: string }[] {
  const order: string[] = [];
  const text = new Map<string, string>();
  const status = new Map<string, string>();
  for (const e of events) {
    if (!e.turnId) continue;
    if (!text.has(e.turnId)) {
      order.push(e.turnId);
      text.set(e.turnId, '');
    }
    if (e.__typename === 'AssistantDelta') text.set(e.turnId, text.get(e.turnId)! + (e.text as string));
    if (e.__typename === 'TurnComplete') status.set(e.turnId, e.status as string);
  }
  return order.map((turnId) => ({ turnId, text: text.get(turnId)!, status: status.get(turnId) ?? 'RUNNING' }));
}

describe('steerSession', () => {
  let sessionId: string;
  /** The cursor of the last event the previous case saw: the next one follows on from it. */
  let lastCursor: string;

  beforeAll(async () => {
    const project = await createProject(h.mesh, 'steered');
    const { startSession } = await gqlData<{ startSession: SessionData }>(
      h.mesh.gatewayUrl,
      `mutation ($p: ID!) { startSession(harnessId: "pi", input: { projectId: $p }) { ${SESSION_FIELDS} } }`,
      { p: project.id },
    );
    sessionId = startSession.id;
  });

  it('queues steers sent during a running turn and runs them in order as the next turns; a repeated key is one steer; a flood is capped', async () => {
    const sub = subscribeEvents(h.mesh, { sessionId });
    const first = await sendTurn(h.mesh, sessionId, 'SLOW 6000 the long first turn');

    const a = await steer(sessionId, 'steer alpha', 'key-alpha');
    expect(a).toMatchObject({ accepted: true, status: 'QUEUED' });
    expect(a.reason).toMatch(/a turn is running.*stdin closed.*runs as the next turn/);
    // The same key again is the same steer, answered alike, queued once.
    expect(await steer(sessionId, 'steer alpha', 'key-alpha')).toEqual(a);
    // The same key with another text is refused, and queues nothing.
    const reused = await gql(h.mesh.gatewayUrl, STEER, { s: sessionId, t: 'steer omega', k: 'key-alpha' });
    expect(codes(reused)).toEqual(['CONFLICT']);

    const rest = ['beta', 'gamma', 'delta', 'epsilon'];
    const answers: SteerData[] = [];
    for (const name of rest) answers.push(await steer(sessionId, `steer ${name}`));
    expect(answers.map((x) => x.status)).toEqual(['QUEUED', 'QUEUED', 'QUEUED', 'QUEUED']);
    expect(answers[0]!.reason).toMatch(/turn 2 of the queue/);
    expect(answers[3]!.reason).toMatch(new RegExp(`turn ${sessionSteerLimits.queued} of the queue`));
    // The queue holds `sessionSteerLimits.queued`: one more is rejected with the reason, not an error.
    const over = await steer(sessionId, 'steer zeta');
    expect(over).toMatchObject({ accepted: false, status: 'REJECTED' });
    expect(over.reason).toMatch(new RegExp(`at most ${sessionSteerLimits.queued}`));

    // The first turn, then one turn per queued steer, each after the previous one completed.
    let seen = 0;
    const events = await takeUntil(sub, (e) => turnCompleted(e) && ++seen === 1 + sessionSteerLimits.queued, 180_000);
    await sub.drop();
    lastCursor = events.at(-1)!.cursor;
    const turns = turnsOf(events);
    expect(turns.map((t) => t.status)).toEqual(Array(1 + sessionSteerLimits.queued).fill('COMPLETED'));
    expect(turns[0]!.turnId).toBe(first.turnId);
    expect(turns.slice(1).map((t) => /ECHO (steer \w+)/.exec(t.text)?.[1])).toEqual(['steer alpha', 'steer beta', 'steer gamma', 'steer delta', 'steer epsilon']);
    // Never two turns at once: every turn's events lie between the previous TurnComplete and its own.
    const completeAt = events.map((e, i) => (turnCompleted(e) ? i : -1)).filter((i) => i >= 0);
    for (let i = 1; i < turns.length; i++) {
      const firstOfTurn = events.findIndex((e) => e.turnId === turns[i]!.turnId);
      expect(firstOfTurn).toBeGreaterThan(completeAt[i - 1]!);
    }
    // Nothing else ran: the session counts exactly these turns, and the rejected steer never ran.
    await waitIdle(h.mesh, sessionId);
    const [row] = await h.mesh.sessions.runtime.dataSource.query('SELECT turns FROM harness_sessions WHERE id = $1', [sessionId]);
    expect(row.turns).toBe(1 + sessionSteerLimits.queued);
    // The steers' turns ran in the worker, yet their events name who steered (the Update carried them).
    const actors = (await h.mesh.sessions.runtime.dataSource.query(
      `SELECT DISTINCT actor->>'subject' AS subject FROM events WHERE stream = 'harness' AND key = $1 AND type = 'TURN_COMPLETE' AND payload->>'turnId' = ANY($2::text[])`,
      [sessionId, turns.slice(1).map((t) => t.turnId)],
    )) as { subject: string | null }[];
    expect(actors).toEqual([{ subject: expect.stringMatching(/^token:/) }]);
    expect(events.some((e) => e.__typename === 'AssistantDelta' && /zeta|omega/.test(e.text as string))).toBe(false);

    // Operators find the queue in Temporal under its own id and kind.
    const client = await connectClient({ address: testTemporalAddress(), namespace: 'default' });
    try {
      const described = await client.workflow.getHandle(`session-steer-${sessionId}`).describe();
      expect(described.type).toBe('sessionSteer');
      expect(described.searchAttributes.KeelsonKind).toEqual(['steer']);
    } finally {
      await client.connection.close();
    }
  });

  it('runs a steer of an idle session at once as its next turn', async () => {
    const sub = subscribeEvents(h.mesh, { sessionId, after: lastCursor });
    const answer = await steer(sessionId, 'steer while idle');
    expect(answer).toMatchObject({ accepted: true, status: 'QUEUED' });
    expect(answer.reason).toMatch(/no turn is running/);
    const events = await takeUntil(sub, turnCompleted, 90_000);
    await sub.drop();
    await waitIdle(h.mesh, sessionId);
    expect(turnsOf(events).map((t) => [t.status, /ECHO (steer while idle)/.test(t.text)])).toEqual([['COMPLETED', true]]);
  });

  it('refuses bad input and unknown sessions with a code, queueing nothing', async () => {
    expect(codes(await gql(h.mesh.gatewayUrl, STEER, { s: sessionId, t: '   ' }))).toEqual(['BAD_USER_INPUT']);
    expect(codes(await gql(h.mesh.gatewayUrl, STEER, { s: sessionId, t: 'x'.repeat(sessionSteerLimits.textBytes + 1) }))).toEqual(['BAD_USER_INPUT']);
    expect(codes(await gql(h.mesh.gatewayUrl, STEER, { s: 'pi:0b9f6a4e-3c2d-4e1f-8a7b-6c5d4e3f2a1b', t: 'hello' }))).toEqual(['NOT_FOUND']);
    const [row] = await h.mesh.sessions.runtime.dataSource.query('SELECT turns, turn_id FROM harness_sessions WHERE id = $1', [sessionId]);
    expect(row).toEqual({ turns: 2 + sessionSteerLimits.queued, turn_id: null });
  });
});
