import { CancelledFailure } from '@temporalio/workflow';
import { swarmTuning, type SwarmLimits } from '@keelson/schema';
import type { HydratedMessage, SwarmTurnResult } from '../activities/swarm/swarmTypes';
import { SwarmRun } from './swarmRun';
import type { AgentState, FinishedTurn, SwarmWorkflowInput } from './swarmState';

const limits: SwarmLimits = { maxAgents: 4, maxTurns: 10, maxTurnsPerAgent: 3, turnTimeoutS: 60, maxMinutes: 5 };
const channel = { busUrl: 'http://bus', workspaceId: 'w1', channelId: 'c1', channelName: 'swarm', webUrl: 'http://web' };

const input = (extra: Partial<SwarmWorkflowInput> = {}): SwarmWorkflowInput => ({
  swarmId: '0123abcd-4567-89ef-0123-456789abcdef',
  opId: 'op1',
  limits,
  leadRole: 'leads',
  agents: [],
  writeMode: false,
  workTools: false,
  kickoff: 'the task',
  heartbeatTimeoutMs: 10_000,
  model: 'lead-model',
  workerModel: 'worker-model',
  ...extra,
});

/** A booted run with the lead (bot user `u-lead`) and workers, on channel c1. */
function booted(workers: string[] = ['ann'], extra: Partial<SwarmWorkflowInput> = {}): SwarmRun {
  const run = new SwarmRun(input(extra));
  run.st.channel = channel;
  run.st.booted = true;
  run.join('lead', 'leads', true, false, { botUserId: 'u-lead', botId: 'b-lead', tokenId: 't-lead' });
  for (const w of workers) run.join(w, 'works', false, false, { botUserId: `u-${w}`, botId: `b-${w}`, tokenId: `t-${w}` });
  return run;
}

const message = (id: string, extra: Partial<HydratedMessage> = {}): HydratedMessage => ({
  id,
  channelId: 'c1',
  authorId: 'human-1',
  authorKind: 'human',
  authorHandle: 'op',
  threadRootId: id,
  mentions: [],
  preview: `preview of ${id}`,
  ...extra,
});

const result = (extra: Partial<SwarmTurnResult> = {}): SwarmTurnResult => ({ status: 'ok', toolCalls: 0, durationMs: 1, posted: [], commands: [], ...extra });

/** Starts agent `a`'s turn and returns the finished turn it would settle as (with `outcome`). */
function turn(run: SwarmRun, a: AgentState, outcome: { result: SwarmTurnResult } | { error: unknown }): FinishedTurn {
  const { turnNo, batch, notes, generation } = run.beginTurn(a);
  return { agentId: a.id, turnNo, generation, batch, notes, ...outcome };
}

const types = (run: SwarmRun) => run.pending.map((e) => e.type);

describe('SwarmRun', () => {
  it('starts fresh, or continues the carried state, counting the executions', () => {
    const first = new SwarmRun(input());
    expect(first.st.runs).toBe(1);
    expect(first.st.booted).toBe(false);
    expect(first.handlePrefix).toBe('s0123abcd');
    expect(first.identity('ann')).toEqual({ handle: 's0123abcd-ann', displayName: 'ann (0123abcd)' });
    first.st.seen = ['m1'];
    first.st.queue = ['m2'];
    const next = new SwarmRun(input({ carried: first.st }));
    expect(next.st.runs).toBe(2);
    next.enqueue('m1');
    next.enqueue('m2');
    expect(next.st.queue).toEqual(['m2']);
  });

  it('joins agents idle with their identity and emits AGENT_JOINED', () => {
    const run = booted(['ann']);
    expect(run.agent('ann')).toMatchObject({ handle: 's0123abcd-ann', status: 'IDLE', tokenIds: ['t-ann'], lead: false, inbox: [] });
    expect(run.lead()?.id).toBe('lead');
    expect(run.pending[1]).toEqual({ type: 'AGENT_JOINED', payload: { swarmId: run.input.swarmId, agentId: 'ann', handle: 's0123abcd-ann', lead: false, writer: false } });
    expect(run.dirty).toBe(true);
  });

  it('hydrates queued ids once each, in batches, skipping seen and duplicate ids', () => {
    const run = booted();
    for (let i = 0; i < 60; i += 1) run.enqueue(`m${i}`);
    run.enqueue('m3');
    const first = run.nextHydration()!;
    expect(first).toHaveLength(50);
    run.ingest([message('m0')]);
    run.enqueue('m0');
    expect(run.nextHydration()).toEqual(['m50', 'm51', 'm52', 'm53', 'm54', 'm55', 'm56', 'm57', 'm58', 'm59']);
    expect(run.nextHydration()).toBeUndefined();
  });

  it('routes a human top-level message to the lead; another channel or a missing message only counts as seen', () => {
    const run = booted();
    run.ingest([message('m1'), message('m2', { channelId: 'other' }), message('m3', { missing: true }), message('m1')]);
    expect(run.lead()!.inbox).toEqual(['m1']);
    expect(run.agent('ann')!.inbox).toEqual([]);
    expect([...run.seen]).toEqual(['m1', 'm2', 'm3']);
    expect(types(run).filter((t) => t === 'MESSAGE_INGESTED')).toHaveLength(1);
  });

  it('puts a reply in the woken agents inboxes and in the other participants background', () => {
    const run = booted(['ann', 'bob']);
    run.ingest([message('root', { mentions: ['s0123abcd-ann', 's0123abcd-bob'] })]);
    run.ingest([message('r1', { threadRootId: 'root', authorId: 'u-ann', authorKind: 'bot', authorHandle: 's0123abcd-ann' })]);
    expect(run.agent('ann')!.inbox).toEqual(['root']);
    expect(run.agent('bob')!.inbox).toEqual(['root', 'r1']);
    expect(run.lead()!.background).toEqual([]);
  });

  it('begins a turn with the agent inbox, notes and background and the model by role', () => {
    const run = booted();
    const ann = run.agent('ann')!;
    ann.inbox.push('m1');
    ann.notes.push('a note');
    const t = run.beginTurn(ann);
    expect(t).toEqual({ turnNo: 1, batch: ['m1'], notes: ['a note'], background: [], model: 'worker-model', generation: 1 });
    expect(ann).toMatchObject({ status: 'BUSY', inbox: [], notes: [], turns: 1 });
    expect(run.busy).toBe(1);
    expect(run.st.turnsUsed).toBe(1);
    expect(run.beginTurn(run.lead()!).model).toBe('lead-model');
  });

  it('picks idle agents with work in roster order, up to the concurrent turns', () => {
    const run = booted(['a1', 'a2', 'a3', 'a4', 'a5'], { limits: { ...limits, maxAgents: 8 } });
    for (const a of run.st.agents) a.inbox.push('m');
    run.agent('a1')!.inbox = [];
    const started: string[] = [];
    for (let a = run.nextTurn(); a; a = run.nextTurn()) {
      started.push(a.id);
      run.beginTurn(a);
    }
    expect(started).toEqual(['lead', 'a2', 'a3', 'a4'].slice(0, swarmTuning.maxConcurrentTurns));
    expect(run.status).toBe('RUNNING');
  });

  it('caps an agent at its turns, and ends the swarm EXHAUSTED when the lead is capped unconcluded', () => {
    const run = booted();
    const ann = run.agent('ann')!;
    ann.turns = limits.maxTurnsPerAgent;
    ann.inbox.push('m');
    expect(run.nextTurn()).toBeUndefined();
    expect(ann.status).toBe('CAPPED');
    expect(run.status).toBe('RUNNING');
    const lead = run.lead()!;
    lead.turns = limits.maxTurnsPerAgent;
    lead.inbox.push('m');
    expect(run.nextTurn()).toBeUndefined();
    expect(run.status).toBe('EXHAUSTED');
    expect(run.endReason).toBe('the lead used all 3 of its turns (maxTurnsPerAgent)');
  });

  it("ends the swarm when its turns are spent: DONE when concluded, EXHAUSTED otherwise", () => {
    const run = booted();
    run.st.turnsUsed = limits.maxTurns;
    run.lead()!.inbox.push('m');
    expect(run.nextTurn()).toBeUndefined();
    expect(run.status).toBe('EXHAUSTED');
    expect(run.endReason).toBe('all 10 turns of the swarm were used (maxTurns)');
    const concluded = booted();
    concluded.st.turnsUsed = limits.maxTurns;
    concluded.st.conclusion = 'answer';
    concluded.lead()!.inbox.push('m');
    concluded.nextTurn();
    expect(concluded.status).toBe('DONE');
    expect(concluded.endReason).toBeUndefined();
  });

  it('settles a successful turn: takes its token, usage, posts and merges, resets failures, and returns it to apply', () => {
    const run = booted();
    const ann = run.agent('ann')!;
    ann.failures = 2;
    const r = result({ newTokenId: 't-2', sessionId: 's1', model: 'm', usage: { inputTokens: 3, outputTokens: 4 }, posted: ['p1'], merges: [{ agent: 'ann', sha: 'abc', result: 'ok', landed: true }] });
    const settled = run.settleTurn(turn(run, ann, { result: r }));
    expect(settled).toEqual({ agent: ann, apply: r });
    expect(ann).toMatchObject({ status: 'IDLE', failures: 0, tokenIds: ['t-ann', 't-2'], sessionId: 's1', model: 'm', usage: { inputTokens: 3, outputTokens: 4 } });
    expect(run.busy).toBe(0);
    expect(run.st.queue).toEqual(['p1']);
    expect(run.st.merges).toHaveLength(1);
    expect(run.pending.at(-1)?.payload).toMatchObject({ agentId: 'ann', turnNo: 1, status: 'ok' });
    expect(run.settleTurn(turn(run, ann, { result: r }), true).apply).toBeUndefined();
  });

  it('gives a failed turn its batch back before what arrived meanwhile, and retires a worker on its third failure in a row', () => {
    const run = booted();
    const ann = run.agent('ann')!;
    for (let i = 1; i <= swarmTuning.maxFailures; i += 1) {
      ann.inbox.push(`m${i}`);
      ann.notes.push(`n${i}`);
      const f = turn(run, ann, { error: new Error(`boom ${i}`) });
      ann.inbox.push(`late${i}`);
      expect(run.settleTurn(f).apply).toBeUndefined();
      expect(ann.inbox.slice(-2)).toEqual([`m${i}`, `late${i}`]);
    }
    expect(ann.failures).toBe(3);
    expect(ann.inbox).toEqual(['m1', 'late1', 'm2', 'late2', 'm3', 'late3']);
    expect(ann.notes).toEqual(['n1', 'n2', 'n3']);
    expect(ann.unsettled).toHaveLength(3);
    expect(ann.status).toBe('FAILED');
    expect(run.pending.at(-1)).toMatchObject({ type: 'AGENT_RETIRED', payload: { agentId: 'ann', reason: '3 failed turns in a row: boom 3' } });
    expect(run.status).toBe('RUNNING');
  });

  it("ends the swarm ERROR on the lead's third failure in a row, but not while ending", () => {
    const run = booted();
    const lead = run.lead()!;
    for (let i = 0; i < swarmTuning.maxFailures; i += 1) run.settleTurn(turn(run, lead, { result: result({ status: 'timeout', error: 'too slow' }) }));
    expect(run.status).toBe('ERROR');
    expect(run.endReason).toBe('the lead failed 3 turns in a row: too slow');
    const ending = booted();
    for (let i = 0; i < swarmTuning.maxFailures; i += 1) ending.settleTurn(turn(ending, ending.lead()!, { error: new Error('x') }), true);
    expect(ending.status).toBe('RUNNING');
  });

  it('marks a cancelled turn unsettled without counting a failure or an event', () => {
    const run = booted();
    const ann = run.agent('ann')!;
    ann.inbox.push('m1');
    const f = turn(run, ann, { error: new CancelledFailure('cancelled') });
    const before = run.pending.length;
    run.settleTurn(f);
    expect(ann).toMatchObject({ status: 'IDLE', failures: 0, inbox: [], unsettled: [{ turnNo: 1, generation: 1 }] });
    expect(run.pending.length).toBe(before);
  });

  it("applies the lead's report and a worker's done, and ignores them from the other role", () => {
    const run = booted();
    const ann = run.agent('ann')!;
    run.applyCommand(ann, { kind: 'report', conclusion: 'not mine' });
    run.applyCommand(run.lead()!, { kind: 'done' });
    expect(run.st.conclusion).toBeUndefined();
    expect(run.lead()!.finished).toBe(false);
    run.applyCommand(run.lead()!, { kind: 'report', conclusion: 'the answer' });
    run.applyCommand(ann, { kind: 'done' });
    expect(run.st.conclusion).toBe('the answer');
    expect(ann.finished).toBe(true);
    expect(types(run).at(-1)).toBe('SWARM_CONCLUDED');
  });

  it('refuses spawns: writers outside write mode, a taken name, past the agent limit', () => {
    const run = booted(['ann'], { limits: { ...limits, maxAgents: 3 } });
    const lead = run.lead()!;
    expect(run.spawnRefusal(lead, { name: 'w', writer: true })).toBe('only the lead chooses writers, in write mode');
    expect(run.spawnRefusal(lead, { name: 'ann', writer: false })).toBe('ann is already in the swarm');
    expect(run.spawnRefusal(lead, { name: 'bob', writer: false })).toBeUndefined();
    run.join('bob', 'r', false, false, { botUserId: 'u-bob', botId: 'b-bob', tokenId: 't-bob' });
    expect(run.spawnRefusal(lead, { name: 'cy', writer: false })).toBe('the swarm is at its limit of 3 agents');
    run.refuseSpawn(lead, 'cy', 'no room');
    run.spawned(lead, 'bob', { leaseId: 'l1', path: '/p', branch: 'swarm/bob' });
    expect(run.agent('bob')!.worktree).toEqual({ leaseId: 'l1', path: '/p', branch: 'swarm/bob' });
    expect(lead.notes).toEqual(['chat_spawn cy was refused: no room', 'bob joined as @s0123abcd-bob, a writer on branch swarm/bob']);
    const writing = booted([], { writeMode: true });
    writing.st.writeBase = { origin: false, branch: 'main' };
    expect(writing.spawnRefusal(writing.lead()!, { name: 'w', writer: true })).toBeUndefined();
  });

  it('ends on a stop before a tail failure before the wall clock', () => {
    const run = booted();
    run.checkEnd(run.st.deadlineMs - 1);
    expect(run.status).toBe('RUNNING');
    run.tailFailure = 'tail lost';
    run.stopRequested = 'enough';
    run.checkEnd(run.st.deadlineMs);
    expect([run.status, run.endReason]).toEqual(['STOPPED', 'enough']);
    const late = booted();
    late.checkEnd(late.st.deadlineMs);
    expect([late.status, late.endReason]).toEqual(['EXHAUSTED', 'the wall clock ran out (maxMinutes 5)']);
  });

  it('after a quiet spell nudges the lead twice, then ends STALLED; a concluded swarm ends DONE', () => {
    const run = booted();
    expect(run.idle()).toBe(true);
    expect(run.afterQuiet()).toBe(true);
    expect(run.lead()!.notes[0]).toContain('(1 nudge(s) left before the swarm ends stalled)');
    expect(run.idle()).toBe(false);
    expect(run.afterQuiet()).toBe(true);
    expect(run.afterQuiet()).toBe(false);
    expect([run.status, run.endReason]).toEqual(['STALLED', 'quiet after 2 nudge(s): the lead did not conclude']);
    expect(types(run).filter((t) => t === 'SWARM_NUDGED')).toHaveLength(2);
    const done = booted();
    done.st.conclusion = 'x';
    expect(done.afterQuiet()).toBe(false);
    expect(done.status).toBe('DONE');
  });

  it('is stirred by queued messages, settled turns, a stop or a tail failure', () => {
    const run = booted();
    expect(run.stirred()).toBe(false);
    run.stopRequested = 'stop';
    expect(run.stirred()).toBe(true);
    const queued = booted();
    queued.enqueue('m');
    expect(queued.stirred()).toBe(true);
    expect(queued.quietForHandOver()).toBe(false);
  });

  it('records the pending events once, with their first index, and nothing when clean', () => {
    const run = booted();
    const first = run.record()!;
    expect(first.fromIdx).toBe(0);
    expect(first.events.map((e) => e.type)).toEqual(['AGENT_JOINED', 'AGENT_JOINED']);
    expect(first.state.agents).toHaveLength(2);
    expect(run.record()).toBeUndefined();
    run.emit('SWARM_NUDGED', { nudge: 1 });
    expect(run.record()!.fromIdx).toBe(2);
  });

  it('hands over the newest seen ids and its own posts', () => {
    const run = booted();
    run.ingest([message('m1')]);
    run.own.add('o1');
    const carried = run.handOver();
    expect(carried.seen).toEqual(['m1']);
    expect(carried.ownPosts).toEqual(['o1']);
    expect(new SwarmRun(input({ carried })).st.runs).toBe(2);
  });

  it('answers the status query and builds the end: the closing post, the revocations, the finish', () => {
    const run = booted();
    run.lead()!.inbox.push('m1');
    expect(run.live()).toMatchObject({ status: 'RUNNING', busy: 0, concluded: false, agents: [{ id: 'lead', inboxDepth: 1 }, { id: 'ann', inboxDepth: 0 }] });
    run.st.conclusion = 'the answer';
    run.status = 'DONE';
    expect(run.closingBody(undefined)).toBe('The swarm ended DONE.\n\nthe answer');
    run.st.writeBase = { origin: false, branch: 'main' };
    expect(run.closingBody({ kept: ['b1'], deleted: [] })).toContain('Write mode on main: 0 merge(s) landed; branches kept: b1.');
    expect(run.revocations()).toEqual([
      { agentId: 'lead', botId: 'b-lead', tokenIds: ['t-lead'], unsettled: [] },
      { agentId: 'ann', botId: 'b-ann', tokenIds: ['t-ann'], unsettled: [] },
    ]);
    const fin = run.finish({ kept: ['b1'], deleted: ['b2'] }, undefined);
    expect(fin).toMatchObject({ status: 'DONE', conclusion: 'the answer', error: null, fromIdx: 0, write: { keptBranches: ['b1'], deletedBranches: ['b2'], merges: [] } });
    expect(fin.events.at(-1)).toEqual({ type: 'SWARM_ENDED', payload: { swarmId: run.input.swarmId, status: 'DONE' } });
  });

  it('ends STOPPED on a cancellation and ERROR on anything else', () => {
    const run = booted();
    run.fail(new CancelledFailure('x'), true);
    expect([run.status, run.endReason]).toEqual(['STOPPED', 'cancelled by request (cancelOp)']);
    run.fail(new Error('outer', { cause: new Error('inner') }), false);
    expect([run.status, run.endReason]).toEqual(['ERROR', 'inner']);
  });

  it('is clean until something is emitted, and takes its handle prefix from the swarm id without dashes', () => {
    expect(new SwarmRun(input()).record()).toBeUndefined();
    const dashed = new SwarmRun(input({ swarmId: '01-23-45-6789abcdef' }));
    expect(dashed.handlePrefix).toBe('s01234567');
  });

  it('hydrates only ids not seen since they were queued, once each, and none from a batch already seen', () => {
    const run = booted();
    run.enqueue('m1');
    run.enqueue('m2');
    run.enqueue('m3');
    run.ingest([message('m2', { channelId: 'other' })]);
    expect(run.nextHydration()).toEqual(['m1', 'm3']);
    const carried = booted().st;
    carried.queue = ['a', 'b', 'a'];
    expect(new SwarmRun(input({ carried })).nextHydration()).toEqual(['a', 'b']);
    const stale = booted();
    stale.enqueue('m1');
    stale.ingest([message('m1', { channelId: 'other' })]);
    expect(stale.nextHydration()).toBeUndefined();
  });

  it('starts no turn once the swarm has ended, nor for a busy agent; notes alone are work', () => {
    const ended = booted();
    ended.lead()!.inbox.push('m');
    ended.status = 'STOPPED';
    expect(ended.nextTurn()).toBeUndefined();
    const run = booted();
    const lead = run.lead()!;
    lead.inbox.push('m1');
    run.beginTurn(lead);
    lead.inbox.push('m2');
    run.agent('ann')!.notes.push('a note');
    expect(run.nextTurn()?.id).toBe('ann');
  });

  it('retires a capped agent with a reason, and keeps a concluded swarm running when its lead is capped', () => {
    const run = booted();
    run.st.conclusion = 'the answer';
    const lead = run.lead()!;
    lead.turns = limits.maxTurnsPerAgent;
    lead.inbox.push('m');
    run.agent('ann')!.inbox.push('m');
    expect(run.nextTurn()?.id).toBe('ann');
    expect(run.status).toBe('RUNNING');
    expect(run.endReason).toBeUndefined();
    expect(run.pending.at(-1)).toEqual({ type: 'AGENT_RETIRED', payload: { swarmId: run.input.swarmId, agentId: 'lead', reason: 'used all 3 of its turns (maxTurnsPerAgent)' } });
  });

  it('emits TURN_STARTED with the batch and TURN_ENDED with the reason of a failed or thrown turn', () => {
    const run = booted();
    const ann = run.agent('ann')!;
    const swarmId = run.input.swarmId;
    ann.inbox.push('m1');
    const f = turn(run, ann, { result: result({ status: 'timeout', error: 'too slow' }) });
    expect(run.pending.at(-1)).toEqual({ type: 'TURN_STARTED', payload: { swarmId, agentId: 'ann', turnNo: 1, messageIds: ['m1'] } });
    run.settleTurn(f);
    expect(run.pending.at(-1)).toEqual({ type: 'TURN_ENDED', payload: { swarmId, agentId: 'ann', turnNo: 1, status: 'timeout', reason: 'too slow' } });
    run.settleTurn(turn(run, ann, { error: new Error('boom') }));
    expect(run.pending.at(-1)).toEqual({ type: 'TURN_ENDED', payload: { swarmId, agentId: 'ann', turnNo: 2, status: 'error', reason: 'boom' } });
    run.settleTurn(turn(run, ann, { result: result() }));
    expect(run.pending.at(-1)).toEqual({ type: 'TURN_ENDED', payload: { swarmId, agentId: 'ann', turnNo: 3, status: 'ok' } });
  });

  it('keeps a session and model a result does not name, and the status an agent took while its turn ran', () => {
    const run = booted();
    const ann = run.agent('ann')!;
    run.settleTurn(turn(run, ann, { result: result({ sessionId: 's1', model: 'm1' }) }));
    run.settleTurn(turn(run, ann, { result: result() }));
    expect([ann.sessionId, ann.model]).toEqual(['s1', 'm1']);
    const f = turn(run, ann, { result: result() });
    ann.status = 'CAPPED';
    run.settleTurn(f);
    expect(ann.status).toBe('CAPPED');
  });

  it('gives a failed turn its batch back once, keeps the agent after one failure, and says "unknown error" for a reasonless one', () => {
    const run = booted();
    const ann = run.agent('ann')!;
    ann.inbox.push('m1');
    const f = turn(run, ann, { result: result({ status: 'error' }) });
    ann.inbox.push('m1', 'm2');
    run.settleTurn(f);
    expect(ann.inbox).toEqual(['m1', 'm2']);
    expect(ann.status).toBe('IDLE');
    expect(types(run)).not.toContain('AGENT_RETIRED');
    for (let i = 1; i < swarmTuning.maxFailures; i += 1) run.settleTurn(turn(run, ann, { result: result({ status: 'error' }) }));
    expect(run.pending.at(-1)?.payload).toMatchObject({ agentId: 'ann', reason: '3 failed turns in a row: unknown error' });
    const lead = run.lead()!;
    for (let i = 0; i < swarmTuning.maxFailures; i += 1) run.settleTurn(turn(run, lead, { result: result({ status: 'error' }) }));
    expect(run.endReason).toBe('the lead failed 3 turns in a row: unknown error');
  });

  it('emits SWARM_CONCLUDED for the lead, and a worker that reports is not done', () => {
    const run = booted();
    const ann = run.agent('ann')!;
    run.applyCommand(ann, { kind: 'report', conclusion: 'mine' });
    expect(ann.finished).toBe(false);
    run.applyCommand(run.lead()!, { kind: 'report', conclusion: 'the answer' });
    expect(run.pending.at(-1)).toEqual({ type: 'SWARM_CONCLUDED', payload: { swarmId: run.input.swarmId, agentId: 'lead' } });
  });

  it('lets only the lead of a write-mode swarm with a write base choose writers; a reader joins without a branch', () => {
    const writing = booted(['ann'], { writeMode: true });
    expect(writing.spawnRefusal(writing.lead()!, { name: 'w', writer: true })).toBe('only the lead chooses writers, in write mode');
    writing.st.writeBase = { origin: false, branch: 'main' };
    expect(writing.spawnRefusal(writing.agent('ann')!, { name: 'w', writer: true })).toBe('only the lead chooses writers, in write mode');
    const reading = booted([], { writeMode: false });
    reading.st.writeBase = { origin: false, branch: 'main' };
    expect(reading.spawnRefusal(reading.lead()!, { name: 'w', writer: true })).toBe('only the lead chooses writers, in write mode');
    writing.join('bob', 'r', false, false, { botUserId: 'u-bob', botId: 'b-bob', tokenId: 't-bob' });
    writing.spawned(writing.lead()!, 'bob');
    expect(writing.lead()!.notes).toEqual(['bob joined as @s0123abcd-bob']);
    expect(writing.agent('bob')!.worktree).toBeUndefined();
  });

  it('ends ERROR on a tail failure, and DONE without a reason when the wall clock runs out on a concluded swarm', () => {
    const run = booted();
    run.tailFailure = 'tail lost';
    run.checkEnd(0);
    expect([run.status, run.endReason]).toEqual(['ERROR', 'tail lost']);
    const late = booted();
    late.st.conclusion = 'the answer';
    late.checkEnd(late.st.deadlineMs);
    expect([late.status, late.endReason]).toEqual(['DONE', undefined]);
  });

  it('has work only in an idle agent with an inbox or notes', () => {
    const run = booted();
    expect(run.hasWork()).toBe(false);
    const ann = run.agent('ann')!;
    ann.inbox.push('m');
    expect(run.hasWork()).toBe(true);
    ann.status = 'BUSY';
    expect(run.hasWork()).toBe(false);
    ann.status = 'IDLE';
    ann.inbox = [];
    ann.notes.push('n');
    expect(run.hasWork()).toBe(true);
  });

  it('is stirred by a settled turn or a tail failure; is idle and quiet for a hand-over only with no turn and no steer running', () => {
    const settled = booted();
    settled.finished.push({ agentId: 'ann', turnNo: 1, generation: 1, batch: [], notes: [], result: result() });
    expect(settled.stirred()).toBe(true);
    const tail = booted();
    tail.tailFailure = 'lost';
    expect(tail.stirred()).toBe(true);
    const run = booted();
    expect([run.idle(), run.quietForHandOver()]).toEqual([true, true]);
    run.busy = 1;
    expect([run.idle(), run.quietForHandOver()]).toEqual([false, false]);
    run.busy = 0;
    run.steering = 1;
    expect([run.idle(), run.quietForHandOver()]).toEqual([false, false]);
  });

  it('emits SWARM_NUDGED with the count, and ends STALLED at once when the lead can take no more turns', () => {
    const run = booted();
    run.afterQuiet();
    expect(run.pending.at(-1)).toEqual({ type: 'SWARM_NUDGED', payload: { swarmId: run.input.swarmId, nudge: 1 } });
    const capped = booted();
    capped.lead()!.status = 'CAPPED';
    expect(capped.afterQuiet()).toBe(false);
    expect([capped.status, capped.endReason]).toEqual(['STALLED', 'quiet, and the lead can take no more turns']);
  });

  it('records the conclusion in the state only once there is one', () => {
    const run = booted();
    expect('conclusion' in run.record()!.state).toBe(false);
    run.applyCommand(run.lead()!, { kind: 'report', conclusion: 'the answer' });
    expect(run.record()!.state.conclusion).toBe('the answer');
  });

  it('hands over at most the newest seenLimit seen ids and own posts', () => {
    const run = booted();
    const n = swarmTuning.seenLimit + 1;
    run.ingest(Array.from({ length: n }, (_, i) => message(`m${i}`, { channelId: 'other' })));
    for (let i = 0; i < n; i += 1) run.own.add(`o${i}`);
    const carried = run.handOver();
    expect(carried.seen).toHaveLength(swarmTuning.seenLimit);
    expect(carried.seen[0]).toBe('m1');
    expect(carried.ownPosts).toHaveLength(swarmTuning.seenLimit);
    expect(carried.ownPosts.at(-1)).toBe(`o${n - 1}`);
  });

  it('lists the writers leases only', () => {
    const run = booted(['ann', 'bob']);
    run.spawned(run.lead()!, 'bob', { leaseId: 'l1', path: '/p', branch: 'swarm/bob' });
    expect(run.writers()).toEqual([{ leaseId: 'l1', path: '/p', branch: 'swarm/bob' }]);
  });

  it('closes with the end reason, the conclusion (cut at 4000) only when DONE, and the landed merges and kept branches', () => {
    const run = booted();
    run.st.conclusion = 'the answer';
    run.status = 'STOPPED';
    run.endReason = 'enough';
    expect(run.closingBody(undefined)).toBe('The swarm ended STOPPED: enough.');
    run.status = 'DONE';
    run.endReason = undefined;
    run.st.conclusion = `${'c'.repeat(4000)}TAIL`;
    expect(run.closingBody(undefined)).toBe(`The swarm ended DONE.\n\n${'c'.repeat(4000)}`);
    run.st.conclusion = 'x';
    run.st.writeBase = { origin: true, branch: 'main', remoteRef: 'origin/main' };
    run.st.merges = [
      { agent: 'ann', sha: 'a', result: 'ok', landed: true },
      { agent: 'bob', sha: 'b', result: 'conflict', landed: false },
    ];
    expect(run.closingBody({ kept: ['b1', 'b2'], deleted: [] })).toBe(
      'The swarm ended DONE.\n\nx\n\nWrite mode on origin/main: 1 merge(s) landed; branches kept: b1, b2. No pull request was opened (no forge is configured).',
    );
    expect(run.closingBody(undefined)).toContain('branches kept: none.');
  });

  it('finishes with the end reason, and write mode with no release and what was published', () => {
    const run = booted();
    run.status = 'STALLED';
    run.endReason = 'quiet';
    run.st.writeBase = { origin: false, branch: 'main' };
    const published = { pushed: true, note: 'pushed', branches: [] };
    const fin = run.finish(undefined, published);
    expect(fin.events.at(-1)).toEqual({ type: 'SWARM_ENDED', payload: { swarmId: run.input.swarmId, status: 'STALLED', reason: 'quiet' } });
    expect(fin).toMatchObject({ status: 'STALLED', conclusion: null, error: 'quiet' });
    expect(fin.write).toStrictEqual({ base: { origin: false, branch: 'main' }, merges: [], keptBranches: [], deletedBranches: [], published });
  });

  it('only marks messages seen before the swarm has its channel', () => {
    const run = new SwarmRun(input());
    run.join('lead', 'leads', true, false, { botUserId: 'u-lead', botId: 'b-lead', tokenId: 't-lead' });
    run.ingest([message('m1')]);
    expect([...run.seen]).toEqual(['m1']);
    expect(run.lead()!.inbox).toEqual([]);
  });

  it('adds a new token once, and none for a result without one (the next turn keeps its generation)', () => {
    const run = booted();
    const ann = run.agent('ann')!;
    run.settleTurn(turn(run, ann, { result: result() }));
    run.settleTurn(turn(run, ann, { result: result({ newTokenId: 't-ann' }) }));
    expect(ann.tokenIds).toEqual(['t-ann']);
    expect(run.beginTurn(ann).generation).toBe(1);
  });
});
