import type { ReplyContext, ReplySpec, Rule } from '@keelson/model-server';
import { messagesIn, rosterHandles, selfHandle, threeAgentRules } from '../../test/support/swarmScript';
import { quietTemporalRuntime } from '../../test/support/temporalServer';
import { SwarmHarness, tokensIn } from '../test/swarmHarness';
import { steerSignal } from './workflows/messages';
import { swarmBusEventSignal, swarmLocalMessageSignal, swarmSteerUpdate, swarmStopSignal } from './workflows/swarmMessages';

const isLead = (ctx: ReplyContext) => ctx.system.includes('You lead the swarm');
const call = (name: string, args: Record<string, unknown>): ReplySpec => ({ toolCall: { name, arguments: args } });
/** A lead that only reports once some text shows up in its turns, and otherwise waits. */
const leadReportsOn = (trigger: string, conclusion: string): Rule => ({
  name: 'lead-reports-on',
  reply: (ctx) => {
    if (!isLead(ctx)) return undefined;
    return [ctx.userText, ...ctx.earlierUserTexts].some((t) => t.includes(trigger)) ? [call('chat_report', { conclusion }), { text: 'reported' }] : { text: 'waiting' };
  },
});
const until = async <T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 30_000): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

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
    const described = await handle.describe();
    expect(handle.workflowId).toBe(`swarm-${swarmId}`);
    expect(described.searchAttributes).toMatchObject({ KeelsonKind: ['swarm'], KeelsonRib: ['swarm'], KeelsonWorkflowName: ['swarm'] });
    expect(await described.memo).toMatchObject({ swarmId, opId });
    expect(await h.settledOp(opId)).toMatchObject({ status: 'SUCCEEDED', result: { swarmId, status: 'DONE' } });

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

  it('takes the operator\'s steer (Update and the op\'s steer Signal) as an operator post that wakes the lead, with OP_STEERED frames; refuses it once ended', async () => {
    h.model.setRules([leadReportsOn('conclude with: steered', 'steered')]);
    const { swarmId, opId, handle } = await h.launch({ task: 'Wait for the operator.' });
    await until('the lead\'s first turn', () => h.events(swarmId), (ev) => ev.some((e) => e.type === 'TURN_ENDED'));
    const accepted = await handle.executeUpdate(swarmSteerUpdate, { args: ['a note first'] });
    expect(accepted).toEqual({ accepted: true, messageId: expect.stringMatching(/^msg_/) });
    await handle.signal(steerSignal, 'conclude with: steered');
    const done = await h.waitFor(swarmId, (s) => s.status !== 'RUNNING');
    expect(done).toMatchObject({ status: 'DONE', conclusion: 'steered' });
    const steered = (await h.opened.dataSource.query(`SELECT payload FROM events WHERE stream = 'ops' AND key = $1 AND type = 'OP_STEERED' ORDER BY seq`, [opId])) as { payload: { note: string } }[];
    expect(steered.map((r) => r.payload.note)).toEqual(['a note first', 'conclude with: steered']);
    const ingested = (await h.events(swarmId)).filter((e) => e.type === 'MESSAGE_INGESTED' && e.payload.messageId === accepted.messageId);
    expect(ingested.map((e) => e.payload.woke)).toEqual([['lead']]);
    await expect(handle.executeUpdate(swarmSteerUpdate, { args: ['too late'] })).rejects.toThrow();
  });

  it('hears a human\'s post in the channel through the tail, drops duplicate signals by message id, and ignores other channels', async () => {
    h.model.setRules([leadReportsOn('HUMAN SAYS conclude', 'heard the human')]);
    const { swarmId, handle } = await h.launch({ task: 'Wait for a human.' });
    const first = await until('the lead\'s first turn', () => h.events(swarmId), (ev) => ev.some((e) => e.type === 'TURN_ENDED'));
    const kickoff = first.find((e) => e.type === 'MESSAGE_INGESTED')!.payload.messageId!;
    for (let i = 0; i < 3; i++) await handle.signal(swarmBusEventSignal, { eventId: `dup-${i}`, cursor: '', type: 'message.created', messageId: kickoff });
    await handle.signal(swarmLocalMessageSignal, { messageId: kickoff });
    const owner = await h.owner();
    const s = (await h.store.get(swarmId))!;
    const other = await owner.createChannel(s.workspaceId!, { name: `other-${swarmId.slice(0, 8)}` });
    const elsewhere = await owner.postMessage(other.id, { body: 'HUMAN SAYS conclude (in another channel)' });
    await handle.signal(swarmLocalMessageSignal, { messageId: elsewhere.message.id });
    const human = await owner.postMessage(s.channelId!, { body: 'HUMAN SAYS conclude' });
    const done = await h.waitFor(swarmId, (x) => x.status !== 'RUNNING');
    expect(done).toMatchObject({ status: 'DONE', conclusion: 'heard the human' });
    const ingested = (await h.events(swarmId)).filter((e) => e.type === 'MESSAGE_INGESTED').map((e) => e.payload);
    expect(ingested.filter((p) => p.messageId === kickoff)).toHaveLength(1);
    expect(ingested.some((p) => p.messageId === elsewhere.message.id)).toBe(false);
    expect(ingested.filter((p) => p.messageId === human.message.id).map((p) => p.woke)).toEqual([['lead']]);
  });

  it('nudges a quiet lead twice, then ends STALLED saying why; the op FAILED', async () => {
    h.model.setRules(threeAgentRules({ leadNeverConcludes: true }));
    const { swarmId, opId } = await h.launch(TASK);
    const done = await h.waitFor(swarmId, (s) => s.status !== 'RUNNING');
    expect(done).toMatchObject({ status: 'STALLED', error: 'quiet after 2 nudge(s): the lead did not conclude' });
    const events = await h.events(swarmId);
    expect(events.filter((e) => e.type === 'SWARM_NUDGED').map((e) => e.payload.nudge)).toEqual([1, 2]);
    expect(await h.settledOp(opId)).toMatchObject({ status: 'FAILED', error: expect.stringContaining('STALLED') });
    expect(tokensIn(await (await h.owner()).listBotsRaw(done.workspaceId!)).filter((t) => !t.revokedAt)).toEqual([]);
  });

  it('stops on swarmStop mid-turn: STOPPED with the reason, the op CANCELLED, the running turn interrupted, every token revoked', async () => {
    h.model.setRules(threeAgentRules({ workerDelayMs: 60_000 }));
    const { swarmId, opId, handle } = await h.launch(TASK);
    await until('a worker\'s turn', () => h.events(swarmId), (ev) => ev.some((e) => e.type === 'TURN_STARTED' && e.payload.agentId === 'alice'));
    await new Promise((r) => setTimeout(r, 500));
    await handle.signal(swarmStopSignal, { reason: 'enough for today' });
    const done = await h.waitFor(swarmId, (s) => s.status !== 'RUNNING', 30_000);
    expect(done).toMatchObject({ status: 'STOPPED', error: 'enough for today' });
    expect(await h.settledOp(opId)).toMatchObject({ status: 'CANCELLED', error: 'enough for today' });
    expect(tokensIn(await (await h.owner()).listBotsRaw(done.workspaceId!)).filter((t) => !t.revokedAt)).toEqual([]);
  });

  it('ends STOPPED when its op is cancelled (cancelOp cancels the workflow), a steer racing the cancel included', async () => {
    h.model.setRules(threeAgentRules({ leadNeverConcludes: true, workerDelayMs: 60_000 }));
    const { swarmId, opId, handle } = await h.launch(TASK);
    await until('a worker\'s turn', () => h.events(swarmId), (ev) => ev.some((e) => e.type === 'TURN_STARTED' && e.payload.agentId !== 'lead'));
    // A steer racing the cancel: its handler must not end the workflow without the end path.
    await handle.signal(steerSignal, 'racing the cancel');
    await handle.cancel();
    await expect(handle.result()).rejects.toThrow();
    const done = await h.waitFor(swarmId, (s) => s.status !== 'RUNNING', 30_000);
    expect(done).toMatchObject({ status: 'STOPPED', error: 'cancelled by request (cancelOp)' });
    expect(await h.settledOp(opId)).toMatchObject({ status: 'CANCELLED' });
    expect(tokensIn(await (await h.owner()).listBotsRaw(done.workspaceId!)).filter((t) => !t.revokedAt)).toEqual([]);
  });

  it('retires a worker after three failed turns in a row; the lead concludes without it', async () => {
    h.model.setRules([
      { name: 'failing alice', reply: (ctx) => (selfHandle(ctx)?.endsWith('-alice') ? { error: { status: 500, message: 'alice is broken' } } : undefined) },
      {
        name: 'lead',
        reply: (ctx) => {
          if (!isLead(ctx)) return undefined;
          if (ctx.userText.includes('The task:')) return [call('chat_post', { body: `@${rosterHandles(ctx)[1]} check A` }), { text: 'asked' }];
          return [call('chat_report', { conclusion: 'alice never answered' }), { text: 'reported' }];
        },
      },
    ]);
    const { swarmId } = await h.launch({ task: 'Ask alice.', agents: [{ name: 'alice', role: 'checks A' }] });
    const done = await h.waitFor(swarmId, (s) => s.status !== 'RUNNING');
    expect(done).toMatchObject({ status: 'DONE', conclusion: 'alice never answered' });
    expect(done.agents.find((a) => a.id === 'alice')).toMatchObject({ status: 'FAILED', turns: 3, inboxDepth: 1 });
    const events = await h.events(swarmId);
    expect(events.filter((e) => e.type === 'TURN_ENDED' && e.payload.agentId === 'alice').map((e) => e.payload.status)).toEqual(['error', 'error', 'error']);
    expect(events.find((e) => e.type === 'AGENT_RETIRED')?.payload).toMatchObject({ agentId: 'alice', reason: expect.stringContaining('3 failed turns in a row') });
  });

  it('ends ERROR when the lead fails three turns in a row', async () => {
    h.model.setRules([{ name: 'failing lead', reply: (ctx) => (isLead(ctx) ? { error: { status: 500, message: 'the lead is broken' } } : undefined) }]);
    const { swarmId, opId } = await h.launch({ task: 'Fail.' });
    const done = await h.waitFor(swarmId, (s) => s.status !== 'RUNNING');
    expect(done).toMatchObject({ status: 'ERROR', error: expect.stringMatching(/^the lead failed 3 turns in a row/) });
    expect(await h.settledOp(opId)).toMatchObject({ status: 'FAILED' });
  });

  it('ends EXHAUSTED when the swarm\'s turns run out (maxTurns)', async () => {
    h.model.setRules(threeAgentRules());
    const { swarmId } = await h.launch({ ...TASK, limits: { maxTurns: 2 } });
    const done = await h.waitFor(swarmId, (s) => s.status !== 'RUNNING');
    expect(done).toMatchObject({ status: 'EXHAUSTED', turnsUsed: 2, error: 'all 2 turns of the swarm were used (maxTurns)' });
  });

  it('caps an agent at maxTurnsPerAgent', async () => {
    h.model.setRules(threeAgentRules({ leadNeverConcludes: true }));
    const { swarmId } = await h.launch({ ...TASK, limits: { maxTurnsPerAgent: 1 } });
    const done = await h.waitFor(swarmId, (s) => s.status !== 'RUNNING');
    expect(done).toMatchObject({ status: 'EXHAUSTED', error: 'the lead used all 1 of its turns (maxTurnsPerAgent)' });
    expect(done.agents.find((a) => a.lead)).toMatchObject({ status: 'CAPPED', turns: 1 });
  });

  it('spawns an agent the lead asks for (chat_spawn), within maxAgents, and refuses one beyond it', async () => {
    h.model.setRules([
      {
        name: 'spawning lead',
        reply: (ctx) => {
          if (!isLead(ctx)) return undefined;
          const heard = [ctx.userText, ...ctx.earlierUserTexts].join('\n');
          if (ctx.userText.includes('The task:')) return [call('chat_spawn', { name: 'carol', role: 'checks C' }), call('chat_spawn', { name: 'dave', role: 'extra' }), { text: 'spawned' }];
          if (heard.includes('C is fine')) return [call('chat_report', { conclusion: 'C is fine' }), { text: 'done' }];
          const carol = rosterHandles(ctx).find((x) => x.endsWith('-carol')) ?? /@(\S+-carol)/.exec(ctx.userText)?.[1];
          return carol ? [call('chat_post', { body: `@${carol} check C` }), { text: 'asked' }] : { text: 'no carol' };
        },
      },
      {
        name: 'carol',
        reply: (ctx) => {
          const me = selfHandle(ctx);
          if (!me?.endsWith('-carol')) return undefined;
          const ask = messagesIn(ctx.userText).find((m) => m.body.includes(`@${me}`));
          return ask ? [call('chat_reply', { messageId: ask.id, body: 'C is fine' }), { text: 'ok' }] : { text: 'idle' };
        },
      },
    ]);
    const { swarmId } = await h.launch({ task: 'Spawn and ask.', limits: { maxAgents: 2 } });
    const done = await h.waitFor(swarmId, (s) => s.status !== 'RUNNING');
    expect(done).toMatchObject({ status: 'DONE', conclusion: 'C is fine' });
    expect(done.agents.map((a) => a.id)).toEqual(['lead', 'carol']);
    expect((await h.events(swarmId)).filter((e) => e.type === 'AGENT_JOINED').map((e) => e.payload.agentId)).toEqual(['lead', 'carol']);
  });

  it('continues as new when its history grows, and finishes the same', async () => {
    h.model.setRules(threeAgentRules());
    const { swarmId, handle, firstRunId } = await h.launch(TASK, { continueAsNewAfterEvents: 60 });
    const done = await h.waitFor(swarmId, (s) => s.status !== 'RUNNING');
    expect(done).toMatchObject({ status: 'DONE', conclusion: 'Both parts are fine: A is fine, B is fine.' });
    expect((await handle.describe()).runId).not.toBe(firstRunId);
    expect((await h.client.workflow.getHandle(handle.workflowId, firstRunId).describe()).status.name).toBe('CONTINUED_AS_NEW');
    const ids = (await h.events(swarmId)).filter((e) => e.type === 'MESSAGE_INGESTED').map((e) => e.payload.messageId);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
