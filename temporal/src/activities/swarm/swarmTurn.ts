import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { AGENT_TOOL_NAMES, bindTurn, BusFailure, LEAD_TOOL_NAMES, MERGE_TOOL_NAME, type BusMessage } from '@keelson/rib-swarm';
import { ClickClackError, commitWriterTurn, systemPrompt, turnPrompt, TurnSession, type HeldToken, type SwarmStore } from '@keelson/swarms';
import { swarmMessages, type EvidenceItem } from '@keelson/schema';
import type { RibAgentTurnResult } from '@keelson/ribs-contract';
import type { SwarmActivityDeps, SwarmTurnInput, SwarmTurnResult, WriterCommit } from './swarmTypes';
import { sleep, type SwarmContext } from './swarmContext';

/** The provider registry's agent turns, as a worker that runs them has them. */
type AgentTurns = NonNullable<SwarmActivityDeps['turns']>;

/** What a claimed turn runs with: its id and lease holder, its start, its takeover switch and the activity. */
interface ClaimedTurn {
  turnId: string;
  holder: string;
  started: number;
  stop: AbortController;
  activity: Context;
}

/** The turn's bus session as the agent, and what its prompt is made of. */
interface OpenedTurn {
  session: TurnSession;
  task: string;
  launch: { evidence?: EvidenceItem[] };
  messages: BusMessage[];
}

/** The `swarmTurn` activity over the shared swarm context. */
export function swarmTurnActivity(c: SwarmContext) {
  const { deps, need } = c;

  /**
   * One agent turn, run once per turn id `<swarmId>:<agentId>:<turnNo>`: a retry finds a settled
   * turn's result, waits out a live holder, or takes over a lapsed lease. The agent's token comes
   * from this worker's vault, else a new one is minted (same id on a retry, by nonce) and the old
   * one revoked. Messages are read with the agent's own token; the turn resumes the agent's provider
   * session with the fixed tool list, and the tools find the agent through the turn context.
   */
  return async function swarmTurn(input: SwarmTurnInput): Promise<SwarmTurnResult> {
    const { store, turns, log } = need();
    if (!turns) throw ApplicationFailure.nonRetryable('this worker runs no agent turns (no provider registry)', 'CAPABILITY_UNSUPPORTED');
    const activity = Context.current();
    const turnId = `${input.swarmId}:${input.agentId}:${input.turnNo}`;
    const holder = `${hostname()}:${process.pid}:${activity.info.activityId}:${activity.info.attempt}:${randomUUID().slice(0, 8)}`;
    const leaseMs = deps?.turnLeaseMs ?? 15_000;
    const beat = setInterval(() => activity.heartbeat(), 1000);
    try {
      const settled = await claimTurnLease(store, input, turnId, holder, leaseMs, activity);
      if (settled) return settled.result;
      const started = Date.now();
      const stop = new AbortController();
      const renew = setInterval(() => {
        store.renewTurn(turnId, holder, leaseMs).then(
          (still) => {
            if (!still) stop.abort(new Error('another attempt took this turn over'));
          },
          () => undefined,
        );
      }, Math.max(1000, Math.floor(leaseMs / 5)));
      try {
        return await runClaimedTurn(c, turns, input, { turnId, holder, started, stop, activity });
      } catch (err) {
        await store.releaseTurn(turnId, holder).catch((e: unknown) => log?.warn({ err: e, turnId }, 'releasing a turn lease failed'));
        throw err;
      } finally {
        clearInterval(renew);
      }
    } finally {
      clearInterval(beat);
    }
  };
}

/** Takes the turn's lease, waiting out a live holder: the settled result when the turn already completed, else undefined once held. */
async function claimTurnLease(store: SwarmStore, input: SwarmTurnInput, turnId: string, holder: string, leaseMs: number, activity: Context): Promise<{ result: SwarmTurnResult } | undefined> {
  for (;;) {
    const claim = await store.claimTurn({ id: turnId, swarmId: input.swarmId, agentId: input.agentId, turnNo: input.turnNo }, holder, leaseMs);
    if (claim.kind === 'completed') return { result: claim.result as SwarmTurnResult };
    if (claim.kind === 'claimed') return undefined;
    if (activity.cancellationSignal.aborted) throw new CancelledFailure(`turn ${turnId} cancelled`);
    await sleep(500, activity.cancellationSignal);
  }
}

/** The turn under its lease: the session opened, the agent's turn run, a writer's changes committed, the result settled. */
async function runClaimedTurn(c: SwarmContext, turns: AgentTurns, input: SwarmTurnInput, t: ClaimedTurn): Promise<SwarmTurnResult> {
  const { store } = c.need();
  const token = await c.agentToken(input);
  let failure: BusFailure | undefined;
  const opened = await openTurnSession(c, input, token.held, t.activity, (f) => {
    failure ??= f;
    t.stop.abort(f);
  });
  const { session } = opened;
  const { result, toolCalls } = await driveTurn(turns, input, opened, t);
  if (t.activity.cancellationSignal.aborted) throw new CancelledFailure(`turn ${t.turnId} cancelled`);
  if (failure) {
    if (failure.revoked) c.vault().drop(input.swarmId, input.agentId);
    await c.recover(failure);
    throw ApplicationFailure.create({ type: 'SERVICE_UNAVAILABLE', message: `turn ${t.turnId}: the bus failed (${failure.message}); the turn is retried` });
  }
  if (t.stop.signal.aborted) throw ApplicationFailure.create({ type: 'CONFLICT', message: `turn ${t.turnId} was taken over by another attempt`, nonRetryable: true });
  const commit = result.status === 'ok' ? await commitWriterChanges(c, input, session) : undefined;
  const settled: SwarmTurnResult = {
    status: result.status === 'aborted' ? 'interrupted' : result.status,
    ...(result.error ? { error: result.error.slice(0, 500) } : {}),
    ...(result.sessionId ? { sessionId: result.sessionId } : {}),
    ...(result.model ? { model: result.model } : {}),
    ...(token.newTokenId ? { newTokenId: token.newTokenId } : {}),
    ...(result.usage ? { usage: result.usage } : {}),
    toolCalls,
    durationMs: Date.now() - t.started,
    posted: session.posted,
    commands: session.commands,
    ...(session.merges.length ? { merges: session.merges } : {}),
    ...(commit ? { commit } : {}),
  };
  return (await store.completeTurn(t.turnId, t.holder, settled)) as SwarmTurnResult;
}

/** The turn's bus session as the agent: the swarm's task and evidence, and its messages read with the agent's own token. */
async function openTurnSession(c: SwarmContext, input: SwarmTurnInput, held: HeldToken, activity: Context, onBusFailure: (f: BusFailure) => void): Promise<OpenedTurn> {
  const { store, bus } = c.need();
  const swarm = await store.get(input.swarmId);
  if (!swarm) throw ApplicationFailure.nonRetryable(`swarm ${input.swarmId} does not exist`, 'NOT_FOUND');
  const launch = swarm.input as { evidence?: EvidenceItem[] };
  const agent = bus.as(held.token);
  const messages = (await c.hydrateWith(agent, input.messageIds).catch(async (err: unknown) => {
    if (err instanceof ClickClackError && err.credentialRevoked) c.vault().drop(input.swarmId, input.agentId);
    await c.recover(err);
    throw err;
  })).filter((m): m is BusMessage => m !== undefined);
  const handleOf = activity.client.workflow.getHandle(input.workflowId);
  const write = input.write;
  const session = new TurnSession({
    swarmId: input.swarmId,
    agentId: input.agentId,
    handle: input.handle,
    turnNo: input.turnNo,
    lead: input.lead,
    writer: input.writer,
    writeMode: input.writeMode,
    agent,
    workspaceId: input.workspaceId,
    channelId: input.channelId,
    task: swarm.task,
    evidence: launch.evidence ?? [],
    roster: input.roster,
    announce: (messageId) => handleOf.signal(swarmMessages.localMessage, { messageId }),
    onBusFailure,
    ...(input.lead && write && !write.base.origin ? { merge: (m: { agent: string; sha: string }) => c.landFor(input, write, m) } : {}),
  });
  return { session, task: swarm.task, launch, messages };
}

/** Runs the agent's turn with its fixed tool list and the session bound as the turn context, draining its stream; the settled result and its tool calls. */
async function driveTurn(turns: AgentTurns, input: SwarmTurnInput, opened: OpenedTurn, t: ClaimedTurn): Promise<{ result: RibAgentTurnResult; toolCalls: number }> {
  const { session, task, launch, messages } = opened;
  const write = input.write;
  const tools: string[] = [...AGENT_TOOL_NAMES, ...(input.lead ? LEAD_TOOL_NAMES : []), ...(input.lead && input.writeMode ? [MERGE_TOOL_NAME] : [])];
  const cwd = write?.worktree?.path ?? input.cwd;
  if ((input.workTools || write?.worktree) && cwd) tools.push('Read', 'Glob', 'Grep', ...(write?.worktree ? ['Write', 'Edit', 'Bash'] : []));
  const bound = bindTurn(session);
  let toolCalls = 0;
  try {
    await turns.ready();
    const turn = turns.run({
      ribId: 'swarm',
      surface: 'rib',
      turnId: t.turnId,
      system: systemPrompt({ handle: input.handle, role: input.role, lead: input.lead, writer: input.writer, writeMode: input.writeMode, channelName: input.channelName, roster: input.roster, workTools: (input.workTools || !!write?.worktree) && !!cwd }),
      prompt: turnPrompt({
        turnNo: input.turnNo,
        first: !input.sessionId,
        task,
        evidence: launch.evidence ?? [],
        messages,
        background: input.background,
        notes: input.notes,
        swarmTurnsLeft: input.swarmTurnsLeft,
        agentTurnsLeft: input.agentTurnsLeft,
      }),
      tools,
      ...(input.sessionId ? { resumeSessionId: input.sessionId } : {}),
      ...(input.model ? { model: input.model } : {}),
      ...(input.provider ? { provider: input.provider } : {}),
      ...(cwd ? { cwd, allowedDirectories: [cwd] } : {}),
      timeoutMs: input.turnTimeoutMs,
      abortSignal: AbortSignal.any([t.activity.cancellationSignal, t.stop.signal]),
      turnContext: bound.turnContext,
      onProgress: () => t.activity.heartbeat(),
    });
    // Drained so the stream never holds the turn; the settled result is the truth.
    for await (const chunk of turn.stream) if (chunk.type === 'tool_use') toolCalls++;
    return { result: await turn.result, toolCalls };
  } finally {
    bound.unbind();
  }
}

/** A writer's changes become a commit of its branch, announced to the lead as the writer; undefined when it has no worktree or nothing changed. */
async function commitWriterChanges(c: SwarmContext, input: SwarmTurnInput, session: TurnSession): Promise<WriterCommit | undefined> {
  const write = input.write;
  if (!write?.worktree) return undefined;
  const made = await commitWriterTurn(
    write.worktree.path,
    { message: `${input.agentId} (swarm ${input.swarmId.slice(0, 8)}) turn ${input.turnNo}`, author: input.handle, email: `${input.handle}@swarm.keelson.invalid` },
    c.gitEnv(),
  );
  if (!made) return undefined;
  const commit: WriterCommit = { ...made, branch: write.worktree.branch };
  const how = write.base.origin
    ? `it stays on ${commit.branch} (no forge is configured: no pull request is opened)`
    : `review it, then chat_merge { agent: "${input.agentId}", sha: "${made.sha}" }`;
  await session.post(`@${write.leadHandle} committed ${made.sha} on ${commit.branch} (${made.files} file(s) changed): ${how}`).catch(() => undefined);
  return commit;
}
