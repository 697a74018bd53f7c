import { threeAgentRules } from '../../test/support/swarmScript';
import { quietTemporalRuntime } from '../../test/support/temporalServer';
import { SwarmHarness, tokensIn } from '../test/swarmHarness';

quietTemporalRuntime();
jest.setTimeout(120_000);

const TASK = { task: 'Check parts A and B of the plan.', agents: [{ name: 'alice', role: 'checks part A' }, { name: 'bob', role: 'checks part B' }] };

describe('the swarm workflow (real worker, Temporal, Postgres, a managed ClickClack, the local model server)', () => {
  let h: SwarmHarness;

  beforeAll(async () => {
    h = await SwarmHarness.start({ rules: threeAgentRules() });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('runs a lead and two workers to DONE: kickoff, routed asks, answers in threads, the lead\'s conclusion; every token revoked', async () => {
    const { swarmId, opId, handle } = await h.launch(TASK);
    const done = await h.waitFor(swarmId, (s) => s.status !== 'RUNNING');
    expect(done).toMatchObject({ status: 'DONE', conclusion: 'Both parts are fine: A is fine, B is fine.', error: null });
    expect(await handle.result()).toEqual({ swarmId, status: 'DONE' });
    expect(await h.op(opId)).toMatchObject({ status: 'SUCCEEDED', result: { swarmId, status: 'DONE' } });

    // The conversation, read from the bus: each message once, authored by the agent that wrote it.
    const owner = await h.owner();
    const roots = (await owner.listMessages(done.channelId!, { afterSeq: 0, limit: 200 })).messages;
    const lead = done.agents.find((a) => a.lead)!;
    expect(roots.map((m) => m.author?.handle ?? 'operator')).toEqual(['operator', lead.handle, lead.handle, 'operator']);
    expect(roots[0]!.body).toContain('Check parts A and B');
    expect(roots.at(-1)!.body).toMatch(/^The swarm ended DONE/);
    const answers = await Promise.all(roots.slice(1, 3).map((r) => owner.getThread(r.id)));
    expect(answers.map((t) => t.replies.map((r) => [r.author?.handle, r.body]))).toEqual([
      [[done.agents.find((a) => a.id === 'alice')!.handle, 'A is fine']],
      [[done.agents.find((a) => a.id === 'bob')!.handle, 'B is fine']],
    ]);

    // Events: ids only; each message ingested once (its echo dropped); the asks woke exactly their worker.
    const events = await h.events(swarmId);
    expect(events[0]!.type).toBe('SWARM_STARTED');
    expect(events.at(-1)).toMatchObject({ type: 'SWARM_ENDED', payload: { status: 'DONE' } });
    const ingested = events.filter((e) => e.type === 'MESSAGE_INGESTED').map((e) => e.payload);
    const ids = ingested.map((p) => p.messageId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ingested.find((p) => p.messageId === roots[0]!.id)?.woke).toEqual(['lead']);
    expect(ingested.find((p) => p.messageId === roots[1]!.id)?.woke).toEqual(['alice']);
    expect(ingested.find((p) => p.messageId === roots[2]!.id)?.woke).toEqual(['bob']);
    expect(ingested.find((p) => p.messageId === answers[0]!.replies[0]!.id)?.woke).toEqual(['lead']);
    expect(JSON.stringify(events)).not.toMatch(/A is fine|ccb_/);
    expect(done.agents.map((a) => [a.id, a.status, a.finished])).toEqual([
      ['lead', 'IDLE', false],
      ['alice', 'IDLE', true],
      ['bob', 'IDLE', true],
    ]);

    // Every token the swarm held is revoked, and no token ever entered the workflow's history.
    const tokens = tokensIn(await owner.listBotsRaw(done.workspaceId!));
    expect(tokens.length).toBeGreaterThanOrEqual(3);
    expect(tokens.filter((t) => !t.revokedAt)).toEqual([]);
    const history = JSON.stringify(await handle.fetchHistory());
    expect(history).not.toMatch(/ccb_[0-9a-f]{16}/);
    expect(history).not.toMatch(/sst_[0-9a-f]{16}/);

    // One turn per turn id, each settled once.
    const turns = (await h.opened.dataSource.query('SELECT id, attempts, completed_at IS NOT NULL AS done FROM swarm_turns WHERE swarm_id = $1 ORDER BY started_at', [swarmId])) as { id: string; attempts: number; done: boolean }[];
    expect(turns.map((t) => t.id)).toEqual(expect.arrayContaining([`${swarmId}:lead:1`, `${swarmId}:alice:1`, `${swarmId}:bob:1`]));
    expect(turns.every((t) => t.done && t.attempts === 1)).toBe(true);
  });
});
