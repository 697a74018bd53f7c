// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
// The swarm workflow's orchestration: its handlers, the boot, the main loop, and the end (publish,
// revoke, settle). Its state is swarmRun.ts, its routing swarmRouting.ts, its turns swarmTurns.ts.
import { ApplicationFailure, CancellationScope, condition, ContinueAsNew, continueAsNew, isCancellation, patched, setHandler, workflowInfo } from '@temporalio/workflow';
import { swarmTuning, type SwarmSteerResult } from '@keelson/schema';
import type { SwarmPublishReport } from '../activities/swarm/swarmActivities';
import type { SwarmBootResult } from '../activities/swarm/swarmTypes';
import { steerSignal } from './messages';
import { swarmBusEventSignal, swarmLocalMessageSignal, swarmStatusQuery, swarmSteerUpdate, swarmStopSignal, type SwarmLiveStatus } from './swarmMessages';
import { swarmProxies, type SwarmCtx } from './swarmProxies';
import { ingestSwarmQueue } from './swarmRouting';
import { SwarmRun, type SwarmReleased } from './swarmRun';
import { failureMessage, now, type SwarmWorkflowInput, type SwarmWorkflowResult } from './swarmState';
import { addSwarmAgent, pumpSwarmTurns, settleSwarmTurn } from './swarmTurns';

/** The patch that added publishing writers' branches at a swarm's end (older executions replay without it). */
export const SWARM_PUBLISH_PATCH = 'swarm-publish';

/** Posts the operator's note into the channel (as the operator) and records it; never throws. */
async function steer(ctx: SwarmCtx, note: string): Promise<SwarmSteerResult> {
  const { run } = ctx;
  const { st } = run;
  const { swarmId, opId } = run.input;
  run.steering += 1;
  try {
    const index = st.steers++;
    await condition(() => st.booted || run.status !== 'RUNNING');
    if (!st.channel || run.status !== 'RUNNING') return { accepted: false, reason: `the swarm is ${run.status}` };
    try {
      const { messageId } = await ctx.proxies.acts.swarmPost({ swarmId, workspaceId: st.channel.workspaceId, channelId: st.channel.channelId, body: note, nonce: `${swarmId}:op:steer:${index}` });
      await ctx.proxies.book.recordSteer({ opId, index, note });
      run.enqueue(messageId);
      return { accepted: true, messageId };
    } catch (err) {
      // A handler must never throw: a cancellation escaping a signal handler would end the workflow
      // without its end path (and its revocations).
      return { accepted: false, reason: isCancellation(err) ? 'the swarm is stopping' : failureMessage(err) };
    }
  } finally {
    run.steering -= 1;
  }
}

/** Installs the swarm's signal, update and query handlers. */
function handleSwarmMessages(ctx: SwarmCtx): void {
  const { run } = ctx;
  const { st } = run;
  setHandler(swarmBusEventSignal, (e) => {
    if (!e || typeof e.messageId !== 'string') return;
    if (e.cursor && (!st.cursor || e.cursor > st.cursor)) st.cursor = e.cursor;
    run.enqueue(e.messageId);
  });
  setHandler(swarmLocalMessageSignal, (e) => {
    if (e && typeof e.messageId === 'string') run.enqueue(e.messageId);
  });
  setHandler(steerSignal, async (note: string) => {
    if (run.status === 'RUNNING' && !run.stopRequested && typeof note === 'string' && note.trim()) await steer(ctx, note);
  });
  setHandler(swarmSteerUpdate, (note: string) => steer(ctx, note), {
    validator: (note: string) => {
      if (typeof note !== 'string' || !note.trim()) throw new Error('the note is empty');
      if (run.status !== 'RUNNING' || run.stopRequested) throw new Error(`the swarm has ended (${run.status === 'RUNNING' ? 'stopping' : run.status})`);
    },
  });
  setHandler(swarmStopSignal, (s) => {
    run.stopRequested ??= (typeof s?.reason === 'string' && s.reason.trim()) || 'stopped by the operator';
  });
  setHandler(swarmStatusQuery, (): SwarmLiveStatus => run.live());
}

/** A new swarm (not a continued one): begins the op, boots the channel, adds the agents, posts the kickoff. */
async function bootSwarm(ctx: SwarmCtx): Promise<void> {
  const { run } = ctx;
  const { book, acts } = ctx.proxies;
  const { st, input } = run;
  const { swarmId, opId } = input;
  if (st.booted) return;
  await book.beginOp({ opId });
  if (input.writeMode && input.projectRoot) st.writeBase = await acts.swarmWriteBase({ projectRoot: input.projectRoot });
  st.channel = await acts.swarmBoot({ swarmId });
  st.cursor = st.channel.tailCursor;
  run.emit('SWARM_STARTED', {});
  await addSwarmAgent(ctx, 'lead', input.leadRole, true, false);
  for (const w of input.agents) await addSwarmAgent(ctx, w.name, w.role, false, false);
  const kickoff = await acts.swarmPost({ swarmId, workspaceId: st.channel.workspaceId, channelId: st.channel.channelId, body: input.kickoff, nonce: `${swarmId}:op:kickoff` });
  run.enqueue(kickoff.messageId);
  st.booted = true;
}

/** Starts following the channel from the cursor; a tail that fails (not cancelled) ends the swarm. */
function startTail(ctx: SwarmCtx, tailScope: CancellationScope): Promise<void> {
  const { run } = ctx;
  const { st } = run;
  const channel = st.channel!;
  const tail = tailScope.run(() =>
    ctx.proxies.tailActs.swarmTail({ swarmId: run.input.swarmId, workflowId: workflowInfo().workflowId, workspaceId: channel.workspaceId, channelId: channel.channelId, ...(st.cursor ? { afterCursor: st.cursor } : {}) }),
  );
  tail.catch((err: unknown) => {
    if (!isCancellation(err)) run.tailFailure = failureMessage(err);
  });
  return tail;
}

/** Whether this execution should hand over to a new one (Temporal suggests it, or the tests' threshold is passed). */
function handOverDue(input: SwarmWorkflowInput): boolean {
  const info = workflowInfo();
  return info.continueAsNewSuggested || (input.continueAsNewAfterEvents !== undefined && info.historyLength > input.continueAsNewAfterEvents);
}

/** Records the events and state changed since the last record. */
async function flush(ctx: SwarmCtx): Promise<void> {
  const record = ctx.run.record();
  if (record) await ctx.proxies.acts.swarmRecord(record);
}

/**
 * The main loop: routes messages, applies settled turns, starts turns, records, and waits; returns
 * once the swarm ended (its status set) and continues as new when a hand-over is due and possible.
 */
async function runSwarm(ctx: SwarmCtx, tailScope: CancellationScope, tail: Promise<void>): Promise<void> {
  const { run } = ctx;
  const { st, input } = run;
  for (;;) {
    await ingestSwarmQueue(run, ctx.proxies.acts);
    while (run.finished.length > 0) await settleSwarmTurn(ctx, run.finished.shift()!);
    if (st.queue.length > 0) continue;
    run.checkEnd(now());
    // A continue-as-new is due: no new turn starts, and the hand-over waits until none runs.
    const handOver = handOverDue(input);
    if (run.status === 'RUNNING' && !handOver) pumpSwarmTurns(ctx);
    if (run.status !== 'RUNNING') return;
    await flush(ctx);

    if (handOver && run.quietForHandOver()) {
      tailScope.cancel();
      await tail.catch(() => undefined);
      return await continueAsNew<typeof swarm>({ ...input, carried: run.handOver() });
    }

    if (!handOver && run.idle()) {
      // Quiet: wait out a late message (a human's, say) before concluding, nudging or stalling.
      if (await condition(() => run.stirred(), swarmTuning.quiescenceMs)) continue;
      if (run.afterQuiet()) continue;
      return;
    }

    await condition(() => run.stirred(), Math.max(1, st.deadlineMs - now()));
  }
}

/** Releases the writers' worktrees and, for a DONE swarm with origin, publishes the kept branches. */
async function releaseWriters(ctx: SwarmCtx): Promise<{ released?: SwarmReleased; published?: SwarmPublishReport }> {
  const { run } = ctx;
  const { st, input } = run;
  const writers = run.writers();
  if (!st.writeBase || !input.projectRoot || !writers.length) return {};
  let released: SwarmReleased;
  try {
    released = await ctx.proxies.acts.swarmReleaseWriters({ root: input.projectRoot, base: st.writeBase, writers });
  } catch (err) {
    released = { kept: writers.map((w) => w.branch), deleted: [] };
    run.endReason ??= `the writers' worktrees could not be released: ${failureMessage(err)}`;
  }
  // With origin, a DONE swarm's kept branches are pushed and offered as draft pull requests where
  // the project opted in (executions begun before this step skip it on replay).
  if (st.writeBase.origin && run.status === 'DONE' && released.kept.length && input.projectId && patched(SWARM_PUBLISH_PATCH)) {
    try {
      const published = await ctx.proxies.publishActs.swarmPublish({ swarmId: input.swarmId, projectId: input.projectId, root: input.projectRoot, base: st.writeBase, branches: released.kept });
      return { released, published };
    } catch (err) {
      return { released, published: { pushed: false, note: `none: publishing failed: ${failureMessage(err)}`, branches: [] } };
    }
  }
  return { released };
}

/** Posts the closing line (a courtesy) and revokes every token the swarm ever held (not a courtesy). */
async function closeChannel(ctx: SwarmCtx, channel: SwarmBootResult, released: SwarmReleased | undefined): Promise<void> {
  const { run } = ctx;
  const { swarmId } = run.input;
  const { acts } = ctx.proxies;
  try {
    const closing = await acts.swarmPost({ swarmId, workspaceId: channel.workspaceId, channelId: channel.channelId, body: run.closingBody(released), nonce: `${swarmId}:rib:end` });
    run.own.add(closing.messageId);
  } catch {
    // The closing line is a courtesy; the revocations below are not.
  }
  await acts.swarmRevoke({ swarmId, workspaceId: channel.workspaceId, agents: run.revocations() });
}

/** The end, whatever ended it (run non-cancellable): stops the tail and turns, releases, revokes, settles. */
async function endSwarm(ctx: SwarmCtx, tailScope: CancellationScope, tail: Promise<void> | undefined): Promise<void> {
  const { run } = ctx;
  tailScope.cancel();
  if (tail) await tail.catch(() => undefined);
  await condition(() => run.steering === 0);
  // Turns still running are stopped; their results (a token they minted, say) still count.
  if (run.busy > 0) ctx.turnScope.cancel();
  await Promise.all(ctx.turnsInFlight);
  while (run.finished.length > 0) await settleSwarmTurn(ctx, run.finished.shift()!, true);
  const { released, published } = await releaseWriters(ctx);
  if (run.st.channel) await closeChannel(ctx, run.st.channel, released);
  await ctx.proxies.acts.swarmFinish(run.finish(released, published));
}

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
  const proxies = swarmProxies(input);
  const run = new SwarmRun(input);
  const ctx: SwarmCtx = { run, proxies, turnScope: new CancellationScope(), turnsInFlight: [] };
  handleSwarmMessages(ctx);
  const tailScope = new CancellationScope();
  let tail: Promise<void> | undefined;
  let cancelled: unknown;

  try {
    await bootSwarm(ctx);
    tail = startTail(ctx, tailScope);
    await runSwarm(ctx, tailScope, tail);
  } catch (err) {
    if (err instanceof ContinueAsNew) throw err;
    if (isCancellation(err)) cancelled = err;
    run.fail(err, isCancellation(err));
  }

  await CancellationScope.nonCancellable(() => endSwarm(ctx, tailScope, tail));
  if (cancelled) throw cancelled;
  if (run.status === 'ERROR') throw ApplicationFailure.create({ type: 'UPSTREAM_FAILED', message: run.endReason ?? 'the swarm failed', nonRetryable: true });
  return { swarmId: input.swarmId, status: run.status };
}
