// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
// The in-memory state of one swarm execution and its pure transitions (no Temporal API but the pure
// `isCancellation`, so it is unit-tested on its own): swarm.ts drives it, swarmRouting.ts feeds it
// messages, swarmTurns.ts runs its agents' turns.
import { isCancellation } from '@temporalio/workflow';
import { swarmTuning, type SwarmEventPayload, type SwarmEventRecord, type SwarmEventType, type SwarmStatus } from '@keelson/schema';
import type { SwarmActivities, SwarmPublishReport } from '../activities/swarm/swarmActivities';
import type { HydratedMessage, SwarmTurnResult, WriterLease } from '../activities/swarm/swarmTypes';
import type { SwarmLiveStatus } from './swarmMessages';
import { ingestMessage } from './swarmRouting';
import {
  active,
  failureMessage,
  freshState,
  liveStatus,
  projection,
  type AgentState,
  type CarriedSwarmState,
  type FinishedTurn,
  type SwarmWorkflowInput,
  type TurnBatch,
} from './swarmState';

/** A command an agent's turn asked of the swarm. */
export type SwarmTurnCommand = SwarmTurnResult['commands'][number];

/** What the writers' release answered: the branches kept (with commits) and deleted. */
export interface SwarmReleased {
  kept: string[];
  deleted: string[];
}

/** How many messages one `swarmHydrate` call takes. */
const HYDRATE_BATCH = 50;

/**
 * One execution of a swarm: the state it carries across continue-as-new (`st`), the message ids seen
 * and queued, events not yet recorded, finished turns not yet applied, the turns running and steers
 * in progress, and how (and why) the swarm ends. Every method is a pure step; the workflow awaits.
 */
export class SwarmRun {
  readonly st: CarriedSwarmState;
  readonly seen: Set<string>;
  readonly own: Set<string>;
  private readonly queued: Set<string>;
  /** Events emitted and not yet recorded. */
  readonly pending: SwarmEventRecord[] = [];
  /** Turns whose activity settled, waiting to be applied by the loop. */
  readonly finished: FinishedTurn[] = [];
  busy = 0;
  status: SwarmStatus = 'RUNNING';
  endReason: string | undefined;
  stopRequested: string | undefined;
  tailFailure: string | undefined;
  steering = 0;
  dirty = false;
  /** The prefix of every agent's handle in this swarm (`s` and the swarm id's first 8 hex digits). */
  readonly handlePrefix: string;

  constructor(readonly input: SwarmWorkflowInput) {
    this.st = input.carried ?? freshState(input.limits);
    this.st.runs += 1;
    this.seen = new Set(this.st.seen);
    this.own = new Set(this.st.ownPosts);
    this.queued = new Set(this.st.queue);
    this.handlePrefix = `s${input.swarmId.replace(/-/g, '').slice(0, 8)}`;
  }

  /** Adds an event to the next record. */
  readonly emit = (type: SwarmEventType, payload: Omit<SwarmEventPayload, 'swarmId'>): void => {
    this.pending.push({ type, payload: { swarmId: this.input.swarmId, ...payload } });
    this.dirty = true;
  };

  /** Queues a message id to be hydrated and routed, unless it was seen or is queued already. */
  enqueue(messageId: string): void {
    if (this.seen.has(messageId) || this.queued.has(messageId)) return;
    this.queued.add(messageId);
    this.st.queue.push(messageId);
  }

  agent(id: string): AgentState | undefined {
    return this.st.agents.find((a) => a.id === id);
  }

  lead(): AgentState | undefined {
    return this.st.agents.find((a) => a.lead);
  }

  /** The handle and display name an agent named `name` joins with. */
  identity(name: string): { handle: string; displayName: string } {
    return { handle: `${this.handlePrefix}-${name}`, displayName: `${name} (${this.input.swarmId.slice(0, 8)})` };
  }

  /** Adds an agent whose bot identity was just made; it joins idle, with an empty inbox. */
  join(name: string, role: string, isLead: boolean, writer: boolean, made: { botUserId: string; botId: string; tokenId: string }): AgentState {
    const { handle, displayName } = this.identity(name);
    const agent: AgentState = {
      id: name,
      handle,
      displayName,
      role,
      lead: isLead,
      writer,
      botUserId: made.botUserId,
      botId: made.botId,
      tokenIds: [made.tokenId],
      status: 'IDLE',
      finished: false,
      turns: 0,
      failures: 0,
      usage: { inputTokens: 0, outputTokens: 0 },
      inbox: [],
      background: [],
      notes: [],
      unsettled: [],
    };
    this.st.agents.push(agent);
    this.emit('AGENT_JOINED', { agentId: name, handle, lead: isLead, writer });
    return agent;
  }

  /** Takes the next batch of queued ids not seen yet (to hydrate), or undefined once the queue is empty. */
  nextHydration(): string[] | undefined {
    while (this.st.queue.length > 0) {
      const batch = this.st.queue.splice(0, HYDRATE_BATCH);
      for (const id of batch) this.queued.delete(id);
      const fresh = batch.filter((id, i) => !this.seen.has(id) && batch.indexOf(id) === i);
      if (fresh.length > 0) return fresh;
    }
    return undefined;
  }

  /** Routes hydrated messages once each; a missing message or one of another channel is only marked seen. */
  ingest(messages: HydratedMessage[]): void {
    for (const m of messages) {
      if (this.seen.has(m.id)) continue;
      this.seen.add(m.id);
      if (m.missing || m.channelId !== this.st.channel?.channelId) continue;
      ingestMessage(this.st, this.own, m, this.emit);
    }
  }

  /**
   * The next idle agent with work whose turn may start now, within the budgets; undefined when none
   * may. Spent budgets cap the agent (its last turn used) or end the swarm (its turns all used).
   */
  nextTurn(): AgentState | undefined {
    const { limits } = this.input;
    for (const a of this.st.agents) {
      if (this.status !== 'RUNNING' || this.busy >= swarmTuning.maxConcurrentTurns) return undefined;
      if (a.status !== 'IDLE' || (a.inbox.length === 0 && a.notes.length === 0)) continue;
      if (this.st.turnsUsed >= limits.maxTurns) {
        this.status = this.st.conclusion !== undefined ? 'DONE' : 'EXHAUSTED';
        this.endReason = this.st.conclusion !== undefined ? undefined : `all ${limits.maxTurns} turns of the swarm were used (maxTurns)`;
        return undefined;
      }
      if (a.turns >= limits.maxTurnsPerAgent) {
        a.status = 'CAPPED';
        this.emit('AGENT_RETIRED', { agentId: a.id, reason: `used all ${limits.maxTurnsPerAgent} of its turns (maxTurnsPerAgent)` });
        if (a.lead && this.st.conclusion === undefined) {
          this.status = 'EXHAUSTED';
          this.endReason = `the lead used all ${limits.maxTurnsPerAgent} of its turns (maxTurnsPerAgent)`;
          return undefined;
        }
        continue;
      }
      return a;
    }
    return undefined;
  }

  /** Starts agent `a`'s turn: it takes its inbox, notes and background, and is busy until it settles. */
  beginTurn(a: AgentState): TurnBatch & { generation: number } {
    const batch = a.inbox.splice(0);
    const notes = a.notes.splice(0);
    const background = a.background.splice(0);
    a.turns += 1;
    this.st.turnsUsed += 1;
    a.status = 'BUSY';
    this.busy += 1;
    const turnNo = a.turns;
    const generation = a.tokenIds.length;
    this.emit('TURN_STARTED', { agentId: a.id, turnNo, messageIds: batch });
    const model = a.lead ? this.input.model : (this.input.workerModel ?? this.input.model);
    return { turnNo, batch, background, notes, model, generation };
  }

  /**
   * Applies a settled turn: its agent is idle again, a result's token, session, model, usage, posts
   * and merges are taken, and `TURN_ENDED` is emitted (a cancelled attempt is only marked unsettled).
   * A failed turn gives its batch and notes back; the third in a row retires a worker or ends the
   * swarm for the lead (not while `ending`). Returns the result whose commands are to be applied.
   */
  settleTurn(f: FinishedTurn, ending = false): { agent: AgentState; apply?: SwarmTurnResult } {
    const a = this.agent(f.agentId)!;
    this.busy -= 1;
    if (a.status === 'BUSY') a.status = 'IDLE';
    let reason: string | undefined;
    if (f.result) {
      const r = f.result;
      this.takeResult(a, r);
      reason = r.error;
      this.emit('TURN_ENDED', { agentId: a.id, turnNo: f.turnNo, status: r.status, ...(r.error ? { reason: r.error } : {}) });
      if (r.status === 'ok') {
        a.failures = 0;
        return ending ? { agent: a } : { agent: a, apply: r };
      }
    } else {
      a.unsettled.push({ turnNo: f.turnNo, generation: f.generation });
      if (isCancellation(f.error)) return { agent: a };
      reason = failureMessage(f.error);
      this.emit('TURN_ENDED', { agentId: a.id, turnNo: f.turnNo, status: 'error', reason });
    }
    this.turnFailed(a, f, reason, ending);
    return { agent: a };
  }

  /** Takes what a turn's result carries into its agent and the swarm. */
  private takeResult(a: AgentState, r: SwarmTurnResult): void {
    if (r.newTokenId && !a.tokenIds.includes(r.newTokenId)) a.tokenIds.push(r.newTokenId);
    if (r.sessionId) a.sessionId = r.sessionId;
    if (r.model) a.model = r.model;
    if (r.usage) {
      a.usage.inputTokens += r.usage.inputTokens;
      a.usage.outputTokens += r.usage.outputTokens;
    }
    for (const id of r.posted) this.enqueue(id);
    if (r.merges?.length) (this.st.merges ??= []).push(...r.merges);
  }

  /** A failed turn: its batch and notes go back first, and failures in a row retire the agent. */
  private turnFailed(a: AgentState, f: FinishedTurn, reason: string | undefined, ending: boolean): void {
    a.failures += 1;
    a.inbox.unshift(...f.batch.filter((id) => !a.inbox.includes(id)));
    a.notes.unshift(...f.notes);
    if (a.failures < swarmTuning.maxFailures || ending) return;
    if (a.lead) {
      this.status = 'ERROR';
      this.endReason = `the lead failed ${a.failures} turns in a row: ${reason ?? 'unknown error'}`;
    } else {
      a.status = 'FAILED';
      this.emit('AGENT_RETIRED', { agentId: a.id, reason: `${a.failures} failed turns in a row: ${reason ?? 'unknown error'}` });
    }
  }

  /** Applies a `report` (the lead's conclusion) or a `done` (a worker's); anything else is ignored here. */
  applyCommand(a: AgentState, c: SwarmTurnCommand): void {
    if (c.kind === 'report' && a.lead) {
      this.st.conclusion = c.conclusion;
      this.emit('SWARM_CONCLUDED', { agentId: a.id });
    } else if (c.kind === 'done' && !a.lead) {
      a.finished = true;
    }
  }

  /** Why agent `a` may not spawn `c` (undefined: it may). */
  spawnRefusal(a: AgentState, c: { name: string; writer: boolean }): string | undefined {
    const { limits, writeMode } = this.input;
    if (c.writer && !(a.lead && writeMode && this.st.writeBase)) return 'only the lead chooses writers, in write mode';
    if (this.st.agents.some((x) => x.id === c.name)) return `${c.name} is already in the swarm`;
    if (this.st.agents.length >= limits.maxAgents) return `the swarm is at its limit of ${limits.maxAgents} agents`;
    return undefined;
  }

  /** Tells agent `a`, in its next turn's notes, that its spawn of `name` was refused. */
  refuseSpawn(a: AgentState, name: string, why: string): void {
    a.notes.push(`chat_spawn ${name} was refused: ${why}`);
  }

  /** Tells agent `a` that `name` joined (a writer with its lease's branch). */
  spawned(a: AgentState, name: string, lease?: WriterLease): void {
    if (lease) {
      this.agent(name)!.worktree = { leaseId: lease.leaseId, path: lease.path, branch: lease.branch };
      a.notes.push(`${name} joined as @${this.handlePrefix}-${name}, a writer on branch ${lease.branch}`);
    } else {
      a.notes.push(`${name} joined as @${this.handlePrefix}-${name}`);
    }
  }

  /** Ends the swarm when a stop was asked for, the tail failed, or the wall clock (at `nowMs`) ran out. */
  checkEnd(nowMs: number): void {
    if (this.stopRequested !== undefined) {
      this.status = 'STOPPED';
      this.endReason = this.stopRequested;
    } else if (this.tailFailure !== undefined) {
      this.status = 'ERROR';
      this.endReason = this.tailFailure;
    } else if (nowMs >= this.st.deadlineMs) {
      this.status = this.st.conclusion !== undefined ? 'DONE' : 'EXHAUSTED';
      this.endReason = this.st.conclusion !== undefined ? undefined : `the wall clock ran out (maxMinutes ${this.input.limits.maxMinutes})`;
    }
  }

  /** Whether an active agent is idle with an inbox or notes. */
  hasWork(): boolean {
    return this.st.agents.some((a) => active(a) && a.status === 'IDLE' && (a.inbox.length > 0 || a.notes.length > 0));
  }

  /** Whether something the loop waits for happened: messages queued, a turn settled, a stop, a tail failure. */
  stirred(): boolean {
    return this.st.queue.length > 0 || this.finished.length > 0 || this.stopRequested !== undefined || this.tailFailure !== undefined;
  }

  /** Whether nothing runs, waits or is being steered (the quiescence wait may begin). */
  idle(): boolean {
    return this.busy === 0 && !this.hasWork() && this.steering === 0;
  }

  /** Whether a due continue-as-new may hand over now: no turn running, no steer, nothing queued. */
  quietForHandOver(): boolean {
    return this.busy === 0 && this.steering === 0 && this.st.queue.length === 0;
  }

  /**
   * After a quiet spell: a concluded swarm is DONE; otherwise the active lead is nudged (true: the
   * loop goes on) until its nudges run out, when the swarm ends STALLED.
   */
  afterQuiet(): boolean {
    if (this.st.conclusion !== undefined) {
      this.status = 'DONE';
      return false;
    }
    const l = this.lead();
    if (l && active(l) && this.st.nudges < swarmTuning.maxNudges) {
      this.st.nudges += 1;
      l.notes.push(
        `The swarm has been quiet with nothing running. If the task is answered, call chat_report with the conclusion; otherwise keep the work going (${swarmTuning.maxNudges - this.st.nudges} nudge(s) left before the swarm ends stalled).`,
      );
      this.emit('SWARM_NUDGED', { nudge: this.st.nudges });
      return true;
    }
    this.status = 'STALLED';
    this.endReason = l && active(l) ? `quiet after ${this.st.nudges} nudge(s): the lead did not conclude` : 'quiet, and the lead can take no more turns';
    return false;
  }

  /** Ends the swarm on what the loop threw: STOPPED for a cancellation, otherwise ERROR. */
  fail(err: unknown, cancelled: boolean): void {
    if (cancelled) {
      this.status = 'STOPPED';
      this.endReason = 'cancelled by request (cancelOp)';
    } else {
      this.status = 'ERROR';
      this.endReason = failureMessage(err);
    }
  }

  /** Takes the pending events with the index of the first. */
  private takeEvents(): { fromIdx: number; events: SwarmEventRecord[] } {
    const events = this.pending.splice(0);
    const fromIdx = this.st.eventSeq;
    this.st.eventSeq += events.length;
    return { fromIdx, events };
  }

  /** The `swarmRecord` input for what changed since the last record, or undefined when nothing did. */
  record(): Parameters<SwarmActivities['swarmRecord']>[0] | undefined {
    if (!this.dirty) return undefined;
    const { fromIdx, events } = this.takeEvents();
    this.dirty = false;
    const { swarmId, opId } = this.input;
    const { st } = this;
    return { swarmId, opId, fromIdx, events, state: { agents: projection(st.agents), turnsUsed: st.turnsUsed, ...(st.conclusion !== undefined ? { conclusion: st.conclusion } : {}) } };
  }

  /** The state the next execution carries (the latest seen and own posts only). */
  handOver(): CarriedSwarmState {
    this.st.seen = [...this.seen].slice(-swarmTuning.seenLimit);
    this.st.ownPosts = [...this.own].slice(-swarmTuning.seenLimit);
    return this.st;
  }

  /** The `swarmStatus` query's answer. */
  live(): SwarmLiveStatus {
    return liveStatus(this.input.swarmId, this.status, this.st, this.busy);
  }

  /** The writers' worktree leases. */
  writers(): WriterLease[] {
    return this.st.agents.filter((a) => a.worktree).map((a) => a.worktree!);
  }

  /** The closing post: how the swarm ended, the conclusion of a DONE one, and write mode's summary. */
  closingBody(released: SwarmReleased | undefined): string {
    const { st, status, endReason } = this;
    return `The swarm ended ${status}${endReason ? `: ${endReason}` : ''}.${st.conclusion !== undefined && status === 'DONE' ? `\n\n${st.conclusion.slice(0, 4000)}` : ''}${
      st.writeBase
        ? `\n\nWrite mode on ${st.writeBase.origin ? st.writeBase.remoteRef : st.writeBase.branch}: ${(st.merges ?? []).filter((m) => m.landed).length} merge(s) landed; branches kept: ${released?.kept.join(', ') || 'none'}. No pull request was opened (no forge is configured).`
        : ''
    }`;
  }

  /** What `swarmRevoke` sweeps: every agent's bot, tokens and unsettled turns. */
  revocations(): Parameters<SwarmActivities['swarmRevoke']>[0]['agents'] {
    return this.st.agents.map((a) => ({ agentId: a.id, botId: a.botId, tokenIds: a.tokenIds, unsettled: a.unsettled }));
  }

  /** Emits `SWARM_ENDED` and returns the `swarmFinish` input: the last events, the outcome, write mode's result. */
  finish(released: SwarmReleased | undefined, published: SwarmPublishReport | undefined): Parameters<SwarmActivities['swarmFinish']>[0] {
    const { st, status, endReason } = this;
    this.emit('SWARM_ENDED', { status, ...(endReason ? { reason: endReason } : {}) });
    const { fromIdx, events } = this.takeEvents();
    const { swarmId, opId } = this.input;
    return {
      swarmId,
      opId,
      fromIdx,
      events,
      status: status as Exclude<SwarmStatus, 'RUNNING'>,
      conclusion: st.conclusion ?? null,
      error: endReason ?? null,
      agents: projection(st.agents),
      turnsUsed: st.turnsUsed,
      ...(st.writeBase ? { write: { base: st.writeBase, merges: st.merges ?? [], keptBranches: released?.kept ?? [], deletedBranches: released?.deleted ?? [], ...(published ? { published } : {}) } } : {}),
    };
  }
}
