import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { AGENT_TOOL_NAMES, bindTurn, BusFailure, LEAD_TOOL_NAMES, MERGE_TOOL_NAME, type BusMessage } from '@keelson/rib-swarm';
import { ClickClackError, commitWriterTurn, systemPrompt, turnPrompt, TurnSession } from '@keelson/swarms';
import { swarmMessages, type EvidenceItem } from '@keelson/schema';
import type { SwarmTurnInput, SwarmTurnResult, WriterCommit } from './swarmTypes';
import { sleep, type SwarmContext } from './swarmContext';

/** The `swarmTurn` activity over the shared swarm context. */
export function swarmTurnActivity(c: SwarmContext) {
  const { deps, need, vault, recover, gitEnv, landFor, hydrateWith, agentToken } = c;

  /**
   * One agent turn, run once per turn id `<swarmId>:<agentId>:<turnNo>`: a retry finds a settled
   * turn's result, waits out a live holder, or takes over a lapsed lease. The agent's token comes
   * from this worker's vault, else a new one is minted (same id on a retry, by nonce) and the old
   * one revoked. Messages are read with the agent's own token; the turn resumes the agent's provider
   * session with the fixed tool list, and the tools find the agent through the turn context.
   */
  return async function swarmTurn(input: SwarmTurnInput): Promise<SwarmTurnResult> {
    const { store, turns, bus, log } = need();
    if (!turns) throw ApplicationFailure.nonRetryable('this worker runs no agent turns (no provider registry)', 'CAPABILITY_UNSUPPORTED');
    const activity = Context.current();
    const turnId = `${input.swarmId}:${input.agentId}:${input.turnNo}`;
    const holder = `${hostname()}:${process.pid}:${activity.info.activityId}:${activity.info.attempt}:${randomUUID().slice(0, 8)}`;
    const leaseMs = deps?.turnLeaseMs ?? 15_000;
    const beat = setInterval(() => activity.heartbeat(), 1000);
    try {
      for (;;) {
        const claim = await store.claimTurn({ id: turnId, swarmId: input.swarmId, agentId: input.agentId, turnNo: input.turnNo }, holder, leaseMs);
        if (claim.kind === 'completed') return claim.result as SwarmTurnResult;
        if (claim.kind === 'claimed') break;
        if (activity.cancellationSignal.aborted) throw new CancelledFailure(`turn ${turnId} cancelled`);
        await sleep(500, activity.cancellationSignal);
      }
      const started = Date.now();
      const stop = new AbortController();
      let failure: BusFailure | undefined;
      const renew = setInterval(() => {
        store.renewTurn(turnId, holder, leaseMs).then(
          (still) => {
            if (!still) stop.abort(new Error('another attempt took this turn over'));
          },
          () => undefined,
        );
      }, Math.max(1000, Math.floor(leaseMs / 5)));
      try {
        const token = await agentToken(input);
        const swarm = await store.get(input.swarmId);
        if (!swarm) throw ApplicationFailure.nonRetryable(`swarm ${input.swarmId} does not exist`, 'NOT_FOUND');
        const launch = swarm.input as { evidence?: EvidenceItem[] };
        const agent = bus.as(token.held.token);
        const messages = (await hydrateWith(agent, input.messageIds).catch(async (err: unknown) => {
          if (err instanceof ClickClackError && err.credentialRevoked) vault().drop(input.swarmId, input.agentId);
          await recover(err);
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
          onBusFailure: (f) => {
            failure ??= f;
            stop.abort(f);
          },
          ...(input.lead && write && !write.base.origin ? { merge: (m: { agent: string; sha: string }) => landFor(input, write, m) } : {}),
        });
        const tools: string[] = [...AGENT_TOOL_NAMES, ...(input.lead ? LEAD_TOOL_NAMES : []), ...(input.lead && input.writeMode ? [MERGE_TOOL_NAME] : [])];
        const cwd = write?.worktree?.path ?? input.cwd;
        if ((input.workTools || write?.worktree) && cwd) tools.push('Read', 'Glob', 'Grep', ...(write?.worktree ? ['Write', 'Edit', 'Bash'] : []));
        const bound = bindTurn(session);
        let result;
        let toolCalls = 0;
        try {
          await turns.ready();
          const turn = turns.run({
            ribId: 'swarm',
            surface: 'rib',
            turnId,
            system: systemPrompt({ handle: input.handle, role: input.role, lead: input.lead, writer: input.writer, writeMode: input.writeMode, channelName: input.channelName, roster: input.roster, workTools: (input.workTools || !!write?.worktree) && !!cwd }),
            prompt: turnPrompt({
              turnNo: input.turnNo,
              first: !input.sessionId,
              task: swarm.task,
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
            abortSignal: AbortSignal.any([activity.cancellationSignal, stop.signal]),
            turnContext: bound.turnContext,
            onProgress: () => activity.heartbeat(),
          });
          // Drained so the stream never holds the turn; the settled result is the truth.
          for await (const chunk of turn.stream) if (chunk.type === 'tool_use') toolCalls++;
          result = await turn.result;
        } finally {
          bound.unbind();
        }
        if (activity.cancellationSignal.aborted) throw new CancelledFailure(`turn ${turnId} cancelled`);
        if (failure) {
          if (failure.revoked) vault().drop(input.swarmId, input.agentId);
          await recover(failure);
          throw ApplicationFailure.create({ type: 'SERVICE_UNAVAILABLE', message: `turn ${turnId}: the bus failed (${failure.message}); the turn is retried` });
        }
        if (stop.signal.aborted) throw ApplicationFailure.create({ type: 'CONFLICT', message: `turn ${turnId} was taken over by another attempt`, nonRetryable: true });
        // A writer's changes become a commit of its branch, announced to the lead as the writer.
        let commit: WriterCommit | undefined;
        if (result.status === 'ok' && write?.worktree) {
          const made = await commitWriterTurn(
            write.worktree.path,
            { message: `${input.agentId} (swarm ${input.swarmId.slice(0, 8)}) turn ${input.turnNo}`, author: input.handle, email: `${input.handle}@swarm.keelson.invalid` },
            gitEnv(),
          );
          if (made) {
            commit = { ...made, branch: write.worktree.branch };
            const how = write.base.origin
              ? `it stays on ${commit.branch} (no forge is configured: no pull request is opened)`
              : `review it, then chat_merge { agent: "${input.agentId}", sha: "${made.sha}" }`;
            await session.post(`@${write.leadHandle} committed ${made.sha} on ${commit.branch} (${made.files} file(s) changed): ${how}`).catch(() => undefined);
          }
        }
        const settled: SwarmTurnResult = {
          status: result.status === 'aborted' ? 'interrupted' : result.status,
          ...(result.error ? { error: result.error.slice(0, 500) } : {}),
          ...(result.sessionId ? { sessionId: result.sessionId } : {}),
          ...(result.model ? { model: result.model } : {}),
          ...(token.newTokenId ? { newTokenId: token.newTokenId } : {}),
          ...(result.usage ? { usage: result.usage } : {}),
          toolCalls,
          durationMs: Date.now() - started,
          posted: session.posted,
          commands: session.commands,
          ...(session.merges.length ? { merges: session.merges } : {}),
          ...(commit ? { commit } : {}),
        };
        return (await store.completeTurn(turnId, holder, settled)) as SwarmTurnResult;
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
