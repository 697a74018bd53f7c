// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  ContinueAsNew,
  continueAsNew,
  isCancellation,
  patched,
  proxyActivities,
  setHandler,
  workflowInfo,
  ActivityCancellationType,
} from '@temporalio/workflow';
import {
  swarmTuning,
  WORKSPACE_ACQUIRE_TIMEOUT_MS,
  type SwarmEventPayload,
  type SwarmEventRecord,
  type SwarmEventType,
  type SwarmStatus,
  type SwarmSteerResult,
} from '@keelson/schema';
import type { OpActivities } from '../activities/ops/opActivities';
import type { SwarmActivities, SwarmPublishReport } from '../activities/swarm/swarmActivities';

/** The patch that added publishing writers' branches at a swarm's end (older executions replay without it). */
export const SWARM_PUBLISH_PATCH = 'swarm-publish';
import type { SwarmTurnResult, WriterLease } from '../activities/swarm/swarmTypes';
import { steerSignal } from './messages';
import {
  active,
  failureMessage,
  freshState,
  ingestMessage,
  liveStatus,
  now,
  projection,
  swarmTurnInput,
  type AgentState,
  type CarriedSwarmState,
  type FinishedTurn,
  type SwarmWorkflowInput,
  type SwarmWorkflowResult,
} from './swarmState';
import { swarmBusEventSignal, swarmLocalMessageSignal, swarmStatusQuery, swarmSteerUpdate, swarmStopSignal, type SwarmLiveStatus } from './swarmMessages';

/**
 * A swarm (seed 001): one durable op = this workflow (`swarm-<id>`, `KeelsonKind=swarm`). It boots
 * the channel, adds the lead and the named workers as bot identities, posts the kickoff as the
 * operator, and follows the bus through a heartbeating tail activity whose id-only `swarmBusEvent`
 * signals it dedupes by message id. Each message is hydrated by an activity and routed by `route()`
 * here; the swarm's own posts arrive at once through `swarmLocalMessage`. An idle agent with a
 * non-empty inbox runs one turn with its batch. A short quiescence precedes concluding, nudging the
 * lead (twice) or stalling. Limits: agents, turns, turns per agent, turn timeout, wall clock; three
 * failed turns in a row retire an agent (the lead's end the swarm). Long swarms continue as new.
 * At the end, whatever happened, every token the swarm ever held is revoked and the op settles.
 */
export async function swarm(input: SwarmWorkflowInput): Promise<SwarmWorkflowResult> {
  const { swarmId, opId, limits } = input;
  const book = proxyActivities<OpActivities>({
    startToCloseTimeout: '1 minute',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', nonRetryableErrorTypes: ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT'] },
  });
  const acts = proxyActivities<SwarmActivities>({
    startToCloseTimeout: '2 minutes',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 30, nonRetryableErrorTypes: ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT', 'CAPABILITY_UNSUPPORTED'] },
  });
  // A writer's lease prepares its worktree's dependencies (npm ci, …) before it answers: as long as the
  // whole acquire may take (WORKSPACE_ACQUIRE_TIMEOUT_MS, as a worktree run's launch) and not repeated
  // when the preparation itself failed (UPSTREAM_FAILED: the lease was refused, nothing kept).
  const leaseActs = proxyActivities<SwarmActivities>({
    startToCloseTimeout: WORKSPACE_ACQUIRE_TIMEOUT_MS + 60_000,
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 5, nonRetryableErrorTypes: ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT', 'CAPABILITY_UNSUPPORTED', 'UPSTREAM_FAILED'] },
  });
  // Publishing runs once: a retry after the draft command succeeded would open a second request.
  const publishActs = proxyActivities<SwarmActivities>({ startToCloseTimeout: '15 minutes', retry: { maximumAttempts: 1 } });
  const tailActs = proxyActivities<SwarmActivities>({
    startToCloseTimeout: '7 days',
    heartbeatTimeout: input.heartbeatTimeoutMs,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '10 seconds', nonRetryableErrorTypes: ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT'] },
  });
  const turnActs = proxyActivities<SwarmActivities>({
    startToCloseTimeout: limits.turnTimeoutS * 1000 + 120_000,
    heartbeatTimeout: input.heartbeatTimeoutMs,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 6, nonRetryableErrorTypes: ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT', 'CAPABILITY_UNSUPPORTED'] },
  });

  const st: CarriedSwarmState = input.carried ?? freshState(limits);
  st.runs += 1;
  const seen = new Set(st.seen);
  const own = new Set(st.ownPosts);
  const queued = new Set(st.queue);
  const pending: SwarmEventRecord[] = [];
  const finished: FinishedTurn[] = [];
  const turnsInFlight: Promise<void>[] = [];
  let busy = 0;
  let status: SwarmStatus = 'RUNNING';
  let endReason: string | undefined;
  let stopRequested: string | undefined;
  let tailFailure: string | undefined;
  let steering = 0;
  let dirty = false;
  const handlePrefix = `s${swarmId.replace(/-/g, '').slice(0, 8)}`;

  const emit = (type: SwarmEventType, payload: Omit<SwarmEventPayload, 'swarmId'>) => {
    pending.push({ type, payload: { swarmId, ...payload } });
    dirty = true;
  };
  const enqueue = (messageId: string) => {
    if (seen.has(messageId) || queued.has(messageId)) return;
    queued.add(messageId);
    st.queue.push(messageId);
  };
  const agent = (id: string) => st.agents.find((a) => a.id === id);
  const lead = () => st.agents.find((a) => a.lead);

  const steer = async (note: string): Promise<SwarmSteerResult> => {
    steering += 1;
    try {
      const index = st.steers++;
      await condition(() => st.booted || status !== 'RUNNING');
      if (!st.channel || status !== 'RUNNING') return { accepted: false, reason: `the swarm is ${status}` };
      try {
        const { messageId } = await acts.swarmPost({ swarmId, workspaceId: st.channel.workspaceId, channelId: st.channel.channelId, body: note, nonce: `${swarmId}:op:steer:${index}` });
        await book.recordSteer({ opId, index, note });
        enqueue(messageId);
        return { accepted: true, messageId };
      } catch (err) {
        // A handler must never throw: a cancellation escaping a signal handler would end the workflow
        // without its end path (and its revocations).
        return { accepted: false, reason: isCancellation(err) ? 'the swarm is stopping' : failureMessage(err) };
      }
    } finally {
      steering -= 1;
    }
  };

  setHandler(swarmBusEventSignal, (e) => {
    if (!e || typeof e.messageId !== 'string') return;
    if (e.cursor && (!st.cursor || e.cursor > st.cursor)) st.cursor = e.cursor;
    enqueue(e.messageId);
  });
  setHandler(swarmLocalMessageSignal, (e) => {
    if (e && typeof e.messageId === 'string') enqueue(e.messageId);
  });
  setHandler(steerSignal, async (note: string) => {
    if (status === 'RUNNING' && !stopRequested && typeof note === 'string' && note.trim()) await steer(note);
  });
  setHandler(swarmSteerUpdate, (note: string) => steer(note), {
    validator: (note: string) => {
      if (typeof note !== 'string' || !note.trim()) throw new Error('the note is empty');
      if (status !== 'RUNNING' || stopRequested) throw new Error(`the swarm has ended (${status === 'RUNNING' ? 'stopping' : status})`);
    },
  });
  setHandler(swarmStopSignal, (s) => {
    stopRequested ??= (typeof s?.reason === 'string' && s.reason.trim()) || 'stopped by the operator';
  });
  setHandler(swarmStatusQuery, (): SwarmLiveStatus => liveStatus(swarmId, status, st, busy));

  const addAgent = async (name: string, role: string, isLead: boolean, writer: boolean) => {
    const channel = st.channel!;
    const handle = `${handlePrefix}-${name}`;
    const displayName = `${name} (${swarmId.slice(0, 8)})`;
    const made = await acts.swarmAddAgent({ swarmId, workspaceId: channel.workspaceId, agentId: name, handle, displayName });
    st.agents.push({
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
    });
    emit('AGENT_JOINED', { agentId: name, handle, lead: isLead, writer });
  };

  const ingestQueue = async () => {
    while (st.queue.length > 0) {
      const batch = st.queue.splice(0, 50);
      for (const id of batch) queued.delete(id);
      const fresh = batch.filter((id, i) => !seen.has(id) && batch.indexOf(id) === i);
      if (fresh.length === 0) continue;
      const { messages } = await acts.swarmHydrate({ swarmId, messageIds: fresh });
      for (const m of messages) {
        if (seen.has(m.id)) continue;
        seen.add(m.id);
        if (m.missing || m.channelId !== st.channel?.channelId) continue;
        ingestMessage(st, own, m, emit);
      }
    }
  };

  const startTurn = (a: AgentState) => {
    const batch = a.inbox.splice(0);
    const notes = a.notes.splice(0);
    const background = a.background.splice(0);
    a.turns += 1;
    st.turnsUsed += 1;
    a.status = 'BUSY';
    busy += 1;
    const turnNo = a.turns;
    const generation = a.tokenIds.length;
    emit('TURN_STARTED', { agentId: a.id, turnNo, messageIds: batch });
    const model = a.lead ? input.model : (input.workerModel ?? input.model);
    const running = turnScope
      .run(() => turnActs.swarmTurn(swarmTurnInput(input, st, a, { turnNo, batch, background, notes, model })))
      .then(
        (result) => {
          finished.push({ agentId: a.id, turnNo, generation, batch, notes, result });
        },
        (error: unknown) => {
          finished.push({ agentId: a.id, turnNo, generation, batch, notes, error });
        },
      );
    turnsInFlight.push(running);
  };

  const applyCommands = async (a: AgentState, r: SwarmTurnResult) => {
    for (const c of r.commands) {
      if (c.kind === 'report' && a.lead) {
        st.conclusion = c.conclusion;
        emit('SWARM_CONCLUDED', { agentId: a.id });
      } else if (c.kind === 'done' && !a.lead) {
        a.finished = true;
      } else if (c.kind === 'spawn') {
        const refuse = (why: string) => a.notes.push(`chat_spawn ${c.name} was refused: ${why}`);
        if (c.writer && !(a.lead && input.writeMode && st.writeBase)) refuse('only the lead chooses writers, in write mode');
        else if (st.agents.some((x) => x.id === c.name)) refuse(`${c.name} is already in the swarm`);
        else if (st.agents.length >= limits.maxAgents) refuse(`the swarm is at its limit of ${limits.maxAgents} agents`);
        else if (c.writer) {
          let lease: WriterLease;
          try {
            lease = await leaseActs.swarmLeaseWriter({ swarmId, projectId: input.projectId!, agentId: c.name, base: st.writeBase! });
          } catch (err) {
            refuse(`no worktree for a writer: ${failureMessage(err)}`);
            continue;
          }
          await addAgent(c.name, c.role, false, true);
          agent(c.name)!.worktree = { leaseId: lease.leaseId, path: lease.path, branch: lease.branch };
          a.notes.push(`${c.name} joined as @${handlePrefix}-${c.name}, a writer on branch ${lease.branch}`);
        } else {
          await addAgent(c.name, c.role, false, false);
          a.notes.push(`${c.name} joined as @${handlePrefix}-${c.name}`);
        }
      }
    }
  };

  const applyFinished = async (f: FinishedTurn, ending = false) => {
    const a = agent(f.agentId)!;
    busy -= 1;
    if (a.status === 'BUSY') a.status = 'IDLE';
    const requeue = () => {
      a.inbox.unshift(...f.batch.filter((id) => !a.inbox.includes(id)));
      a.notes.unshift(...f.notes);
    };
    let ok = false;
    let reason: string | undefined;
    if (f.result) {
      const r = f.result;
      if (r.newTokenId && !a.tokenIds.includes(r.newTokenId)) a.tokenIds.push(r.newTokenId);
      if (r.sessionId) a.sessionId = r.sessionId;
      if (r.model) a.model = r.model;
      if (r.usage) {
        a.usage.inputTokens += r.usage.inputTokens;
        a.usage.outputTokens += r.usage.outputTokens;
      }
      for (const id of r.posted) enqueue(id);
      if (r.merges?.length) (st.merges ??= []).push(...r.merges);
      ok = r.status === 'ok';
      reason = r.error;
      emit('TURN_ENDED', { agentId: a.id, turnNo: f.turnNo, status: r.status, ...(r.error ? { reason: r.error } : {}) });
      if (ok && !ending) await applyCommands(a, r);
    } else {
      a.unsettled.push({ turnNo: f.turnNo, generation: f.generation });
      if (isCancellation(f.error)) return;
      reason = failureMessage(f.error);
      emit('TURN_ENDED', { agentId: a.id, turnNo: f.turnNo, status: 'error', reason });
    }
    if (ok) {
      a.failures = 0;
      return;
    }
    a.failures += 1;
    requeue();
    if (a.failures < swarmTuning.maxFailures || ending) return;
    if (a.lead) {
      status = 'ERROR';
      endReason = `the lead failed ${a.failures} turns in a row: ${reason ?? 'unknown error'}`;
    } else {
      a.status = 'FAILED';
      emit('AGENT_RETIRED', { agentId: a.id, reason: `${a.failures} failed turns in a row: ${reason ?? 'unknown error'}` });
    }
  };

  /** Starts a turn for every idle agent with work, within the budgets; ends the swarm when the budgets are spent. */
  const pump = () => {
    for (const a of st.agents) {
      if (status !== 'RUNNING' || busy >= swarmTuning.maxConcurrentTurns) return;
      if (a.status !== 'IDLE' || (a.inbox.length === 0 && a.notes.length === 0)) continue;
      if (st.turnsUsed >= limits.maxTurns) {
        status = st.conclusion !== undefined ? 'DONE' : 'EXHAUSTED';
        endReason = st.conclusion !== undefined ? undefined : `all ${limits.maxTurns} turns of the swarm were used (maxTurns)`;
        return;
      }
      if (a.turns >= limits.maxTurnsPerAgent) {
        a.status = 'CAPPED';
        emit('AGENT_RETIRED', { agentId: a.id, reason: `used all ${limits.maxTurnsPerAgent} of its turns (maxTurnsPerAgent)` });
        if (a.lead && st.conclusion === undefined) {
          status = 'EXHAUSTED';
          endReason = `the lead used all ${limits.maxTurnsPerAgent} of its turns (maxTurnsPerAgent)`;
          return;
        }
        continue;
      }
      startTurn(a);
    }
  };

  const flush = async () => {
    if (!dirty) return;
    const events = pending.splice(0);
    const fromIdx = st.eventSeq;
    st.eventSeq += events.length;
    dirty = false;
    await acts.swarmRecord({ swarmId, opId, fromIdx, events, state: { agents: projection(st.agents), turnsUsed: st.turnsUsed, ...(st.conclusion !== undefined ? { conclusion: st.conclusion } : {}) } });
  };

  const hasWork = () => st.agents.some((a) => active(a) && a.status === 'IDLE' && (a.inbox.length > 0 || a.notes.length > 0));
  const stirred = () => st.queue.length > 0 || finished.length > 0 || stopRequested !== undefined || tailFailure !== undefined;

  const tailScope = new CancellationScope();
  const turnScope = new CancellationScope();
  let tail: Promise<void> | undefined;
  let cancelled: unknown;

  try {
    if (!st.booted) {
      await book.beginOp({ opId });
      if (input.writeMode && input.projectRoot) st.writeBase = await acts.swarmWriteBase({ projectRoot: input.projectRoot });
      st.channel = await acts.swarmBoot({ swarmId });
      st.cursor = st.channel.tailCursor;
      emit('SWARM_STARTED', {});
      await addAgent('lead', input.leadRole, true, false);
      for (const w of input.agents) await addAgent(w.name, w.role, false, false);
      const kickoff = await acts.swarmPost({ swarmId, workspaceId: st.channel.workspaceId, channelId: st.channel.channelId, body: input.kickoff, nonce: `${swarmId}:op:kickoff` });
      enqueue(kickoff.messageId);
      st.booted = true;
    }
    const channel = st.channel!;
    tail = tailScope.run(() =>
      tailActs.swarmTail({ swarmId, workflowId: workflowInfo().workflowId, workspaceId: channel.workspaceId, channelId: channel.channelId, ...(st.cursor ? { afterCursor: st.cursor } : {}) }),
    );
    tail.catch((err: unknown) => {
      if (!isCancellation(err)) tailFailure = failureMessage(err);
    });

    for (;;) {
      await ingestQueue();
      while (finished.length > 0) await applyFinished(finished.shift()!);
      if (st.queue.length > 0) continue;
      if (stopRequested !== undefined) {
        status = 'STOPPED';
        endReason = stopRequested;
      } else if (tailFailure !== undefined) {
        status = 'ERROR';
        endReason = tailFailure;
      } else if (now() >= st.deadlineMs) {
        status = st.conclusion !== undefined ? 'DONE' : 'EXHAUSTED';
        endReason = st.conclusion !== undefined ? undefined : `the wall clock ran out (maxMinutes ${limits.maxMinutes})`;
      }
      // A continue-as-new is due: no new turn starts, and the hand-over waits until none runs.
      const info = workflowInfo();
      const handOver = info.continueAsNewSuggested || (input.continueAsNewAfterEvents !== undefined && info.historyLength > input.continueAsNewAfterEvents);
      if (status === 'RUNNING' && !handOver) pump();
      if (status !== 'RUNNING') break;
      await flush();

      if (handOver && busy === 0 && steering === 0 && st.queue.length === 0) {
        tailScope.cancel();
        await tail.catch(() => undefined);
        st.seen = [...seen].slice(-swarmTuning.seenLimit);
        st.ownPosts = [...own].slice(-swarmTuning.seenLimit);
        return await continueAsNew<typeof swarm>({ ...input, carried: st });
      }

      if (!handOver && busy === 0 && !hasWork() && steering === 0) {
        // Quiet: wait out a late message (a human's, say) before concluding, nudging or stalling.
        if (await condition(stirred, swarmTuning.quiescenceMs)) continue;
        if (st.conclusion !== undefined) {
          status = 'DONE';
          break;
        }
        const l = lead();
        if (l && active(l) && st.nudges < swarmTuning.maxNudges) {
          st.nudges += 1;
          l.notes.push(
            `The swarm has been quiet with nothing running. If the task is answered, call chat_report with the conclusion; otherwise keep the work going (${swarmTuning.maxNudges - st.nudges} nudge(s) left before the swarm ends stalled).`,
          );
          emit('SWARM_NUDGED', { nudge: st.nudges });
          continue;
        }
        status = 'STALLED';
        endReason = l && active(l) ? `quiet after ${st.nudges} nudge(s): the lead did not conclude` : 'quiet, and the lead can take no more turns';
        break;
      }

      await condition(stirred, Math.max(1, st.deadlineMs - now()));
    }
  } catch (err) {
    if (err instanceof ContinueAsNew) throw err;
    if (isCancellation(err)) {
      cancelled = err;
      status = 'STOPPED';
      endReason = 'cancelled by request (cancelOp)';
    } else {
      status = 'ERROR';
      endReason = failureMessage(err);
    }
  }

  // The end, whatever ended it: nothing here can be cancelled.
  await CancellationScope.nonCancellable(async () => {
    tailScope.cancel();
    if (tail) await tail.catch(() => undefined);
    await condition(() => steering === 0);
    // Turns still running are stopped; their results (a token they minted, say) still count.
    if (busy > 0) turnScope.cancel();
    await Promise.all(turnsInFlight);
    while (finished.length > 0) await applyFinished(finished.shift()!, true);
    let released: { kept: string[]; deleted: string[] } | undefined;
    let published: SwarmPublishReport | undefined;
    const writers = st.agents.filter((a) => a.worktree).map((a) => a.worktree!);
    if (st.writeBase && input.projectRoot && writers.length) {
      try {
        released = await acts.swarmReleaseWriters({ root: input.projectRoot, base: st.writeBase, writers });
      } catch (err) {
        released = { kept: writers.map((w) => w.branch), deleted: [] };
        endReason ??= `the writers' worktrees could not be released: ${failureMessage(err)}`;
      }
      // With origin, a DONE swarm's kept branches are pushed and offered as draft pull requests where
      // the project opted in (executions begun before this step skip it on replay).
      if (st.writeBase.origin && status === 'DONE' && released.kept.length && input.projectId && patched(SWARM_PUBLISH_PATCH)) {
        try {
          published = await publishActs.swarmPublish({ swarmId, projectId: input.projectId, root: input.projectRoot, base: st.writeBase, branches: released.kept });
        } catch (err) {
          published = { pushed: false, note: `none: publishing failed: ${failureMessage(err)}`, branches: [] };
        }
      }
    }
    if (st.channel) {
      const channel = st.channel;
      try {
        const closing = await acts.swarmPost({
          swarmId,
          workspaceId: channel.workspaceId,
          channelId: channel.channelId,
          body: `The swarm ended ${status}${endReason ? `: ${endReason}` : ''}.${st.conclusion !== undefined && status === 'DONE' ? `\n\n${st.conclusion.slice(0, 4000)}` : ''}${
            st.writeBase
              ? `\n\nWrite mode on ${st.writeBase.origin ? st.writeBase.remoteRef : st.writeBase.branch}: ${(st.merges ?? []).filter((m) => m.landed).length} merge(s) landed; branches kept: ${released?.kept.join(', ') || 'none'}. No pull request was opened (no forge is configured).`
              : ''
          }`,
          nonce: `${swarmId}:rib:end`,
        });
        own.add(closing.messageId);
      } catch {
        // The closing line is a courtesy; the revocations below are not.
      }
      await acts.swarmRevoke({
        swarmId,
        workspaceId: channel.workspaceId,
        agents: st.agents.map((a) => ({ agentId: a.id, botId: a.botId, tokenIds: a.tokenIds, unsettled: a.unsettled })),
      });
    }
    emit('SWARM_ENDED', { status, ...(endReason ? { reason: endReason } : {}) });
    const events = pending.splice(0);
    const fromIdx = st.eventSeq;
    st.eventSeq += events.length;
    await acts.swarmFinish({
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
    });
  });
  if (cancelled) throw cancelled;
  if (status === 'ERROR') throw ApplicationFailure.create({ type: 'UPSTREAM_FAILED', message: endReason ?? 'the swarm failed', nonRetryable: true });
  return { swarmId, status };
}
