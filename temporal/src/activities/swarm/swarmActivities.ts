import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import {
  AGENT_TOOL_NAMES,
  bindTurn,
  BusFailure,
  ClickClackError,
  commitWriterTurn,
  cutWriterWorktree,
  detectWriteBase,
  landReviewedSha,
  pruneWriterBranch,
  LEAD_TOOL_NAMES,
  MERGE_TOOL_NAME,
  processVault,
  systemPrompt,
  turnPrompt,
  TurnSession,
  type BackgroundPreview,
  type BusAccess,
  type BusMessage,
  type ClickClackClient,
  type HeldToken,
  type RosterLine,
  type SwarmAgentView,
  type SwarmCommand,
  type SwarmStore,
  type TokenVault,
  type WriteBase,
} from '@keelson/rib-swarm';
import type { AgentTurnRequest } from '@keelson/providers';
import {
  mentionsIn,
  swarmMessages,
  swarmTuning,
  type EvidenceItem,
  type SwarmBusEventSignal,
  type SwarmEventRecord,
  type SwarmStatus,
} from '@keelson/schema';
import type { Logger } from '@keelson/service';
import type { RibAgentTurn } from '@keelson/shared';
import type { ProjectsApi } from '@keelson/runs';
import type { OpStore } from '@keelson/runs';
import { asActivity } from '../failures';

/** What the swarm activities reach the world through. */
export interface SwarmActivityDeps {
  store: SwarmStore;
  ops: OpStore;
  /** The bus as this worker reaches it (its own env: CLICKCLACK_*, KEELSON_HOME). */
  bus: BusAccess;
  /** Agent turns through the provider registry, with the worker's rib host (the agent tools). */
  turns?: { run(req: AgentTurnRequest): RibAgentTurn; ready(): Promise<unknown> };
  /** @default the process's vault */
  vault?: TokenVault;
  /** Write mode: writers' worktree leases and the root's mutation lock, through the projects subgraph. */
  projects?: ProjectsApi;
  /** The environment git runs with in write mode (identity, GIT_CONFIG_GLOBAL). @default process.env */
  gitEnv?: Record<string, string | undefined>;
  log?: Logger;
  /** A turn's lease, renewed while it runs: a lost worker's turn is taken over after it lapses. @default 15000 */
  turnLeaseMs?: number;
}

/** The channel the swarm's boot created (or found, on a retry). */
export interface SwarmBootResult {
  busUrl: string;
  workspaceId: string;
  channelId: string;
  channelName: string;
  webUrl: string;
  /** The newest durable cursor before the channel existed; the tail starts after it. */
  tailCursor?: string;
}

/** A message as routing needs it: never its body (a one-line preview at most). */
export interface HydratedMessage {
  id: string;
  channelId: string | null;
  authorId: string;
  authorKind: 'human' | 'bot';
  authorHandle: string | null;
  threadRootId: string;
  mentions: string[];
  preview: string;
  /** The message no longer exists (deleted): nothing to route. */
  missing?: boolean;
}

export interface SwarmTurnInput {
  swarmId: string;
  agentId: string;
  turnNo: number;
  /** The swarm workflow's id: where posts are announced. */
  workflowId: string;
  workspaceId: string;
  channelId: string;
  channelName: string;
  botId: string;
  /** Every token id the workflow recorded for the agent, oldest first. */
  tokenIds: string[];
  messageIds: string[];
  background: BackgroundPreview[];
  notes: string[];
  /** The provider session the agent's turns resume. */
  sessionId?: string;
  handle: string;
  role: string;
  lead: boolean;
  writer: boolean;
  writeMode: boolean;
  roster: RosterLine[];
  swarmTurnsLeft: number;
  agentTurnsLeft: number;
  turnTimeoutMs: number;
  provider?: string;
  model?: string;
  /** The turn's working directory (a project, or a writer's worktree); absent: a neutral directory. */
  cwd?: string;
  /** Offer Read/Glob/Grep (and Write/Edit/Bash to a writer) confined to `cwd`. */
  workTools: boolean;
  /** Write mode: the project, its write base, this writer's worktree, and (for the lead) every writer's branch. */
  write?: SwarmWriteContext;
}

/** What a turn in write mode knows. */
export interface SwarmWriteContext {
  projectId: string;
  root: string;
  base: WriteBase;
  /** This agent's worktree, when it is a writer. */
  worktree?: WriterLease;
  /** Every writer's branch by agent id (the lead's chat_merge lands their reviewed SHAs). */
  writers: Record<string, string>;
  /** The lead's handle (a writer's commit notice addresses it). */
  leadHandle: string;
}

/** A writer's worktree lease. */
export interface WriterLease {
  leaseId: string;
  path: string;
  branch: string;
}

/** A writer's commit after a turn (the engine commits: the agent cannot write git metadata). */
export interface WriterCommit {
  sha: string;
  branch: string;
  files: number;
}

export interface SwarmTurnResult {
  status: 'ok' | 'timeout' | 'error' | 'interrupted';
  error?: string;
  sessionId?: string;
  model?: string;
  /** A token minted by this turn (the previous one was lost with its worker); the workflow records it. */
  newTokenId?: string;
  usage?: { inputTokens: number; outputTokens: number };
  toolCalls: number;
  durationMs: number;
  /** Messages the turn wrote (also announced one by one while it ran). */
  posted: string[];
  commands: SwarmCommand[];
  /** Write mode: what the lead's chat_merge landed or was refused. */
  merges?: { agent: string; sha: string; result: string; landed: boolean }[];
  /** Write mode: the writer's commit of this turn's changes. */
  commit?: WriterCommit;
}

/** The nonce a turn mints its agent's replacement token under: a retried attempt gets the same token id back. */
export function tokenNonce(swarmId: string, agentId: string, generation: number, turnNo: number): string {
  return `${swarmId}:${agentId}:tok${generation}:${turnNo}`;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });

/** A bus call's failure as the activity reports it: a rejected credential is final, anything else retried. */
function busFailure(err: unknown, what: string): never {
  if (err instanceof ClickClackError && err.credentialRevoked) {
    throw ApplicationFailure.create({ type: 'UPSTREAM_FAILED', message: `ClickClack credential revoked (${what}): ${err.message}`, nonRetryable: true });
  }
  throw err;
}

/** The activities of the `swarm` workflow. */
export function createSwarmActivities(deps: SwarmActivityDeps | undefined) {
  const need = (): SwarmActivityDeps => {
    if (!deps) throw ApplicationFailure.nonRetryable('this worker was started without the swarm domain (ActivityDeps.swarm)', 'SERVICE_UNAVAILABLE');
    return deps;
  };
  const vault = () => need().vault ?? processVault;

  /** The owner's client; in managed mode the server is started or adopted first when it does not answer. */
  const owner = async (): Promise<ClickClackClient> => {
    const { bus } = need();
    try {
      return await bus.ownerClient();
    } catch (err) {
      if (err instanceof ClickClackError && err.unreachable && bus.managed) {
        await bus.ensure();
        return bus.ownerClient();
      }
      throw err;
    }
  };

  /** After a bus failure in managed mode, the server is brought back (same data directory) before the retry. */
  const recover = async (err: unknown): Promise<void> => {
    const { bus } = need();
    if (bus.managed && ((err instanceof ClickClackError && err.unreachable) || (err instanceof BusFailure && !err.revoked))) {
      await bus.ensure().catch((e: unknown) => need().log?.warn({ err: e }, 'the managed ClickClack could not be brought back'));
    }
    if (err instanceof ClickClackError && err.credentialRevoked) bus.invalidateOwner();
  };

  const gitEnv = () => need().gitEnv ?? process.env;

  /** chat_merge: under the project's mutation lock, lands the reviewed SHA of a writer's branch. */
  const landFor = async (input: SwarmTurnInput, write: SwarmWriteContext, m: { agent: string; sha: string }): Promise<string> => {
    const branch = write.writers[m.agent];
    if (!branch) throw new Error(`${m.agent} is not a writer of this swarm (writers: ${Object.keys(write.writers).join(', ') || 'none'})`);
    const projects = need().projects;
    if (!projects?.acquireMutationLock || !projects.releaseMutationLock) throw new Error('no mutation lock is available on this worker: refusing to change the project unguarded');
    const lock = await projects.acquireMutationLock(write.projectId, `swarm ${input.swarmId.slice(0, 8)}: merge ${m.agent}'s ${m.sha.slice(0, 12)}`, `swarm:${input.swarmId}`);
    try {
      return await landReviewedSha({ root: write.root, base: write.base.branch, branch, sha: m.sha, agent: m.agent, env: gitEnv() });
    } finally {
      await projects.releaseMutationLock(lock.id).catch(() => undefined);
    }
  };

  const hydrateWith = async (client: ClickClackClient, ids: readonly string[]): Promise<(BusMessage | undefined)[]> =>
    Promise.all(
      ids.map((id) =>
        client.getMessage(id).catch((err: unknown) => {
          if (err instanceof ClickClackError && err.status === 404) return undefined;
          throw err;
        }),
      ),
    );

  return {
    /**
     * Brings the bus up (managed: started or adopted), then as the owner: the workspace, the tail
     * cursor, and the channel `swarm-<id prefix>` (found by name on a retry, so never two).
     */
    async swarmBoot(input: { swarmId: string }): Promise<SwarmBootResult> {
      return asActivity(async () => {
        const { bus, store } = need();
        await bus.ensure();
        try {
          const client = await owner();
          const [workspace] = await client.listWorkspaces();
          if (!workspace) throw ApplicationFailure.nonRetryable('the ClickClack owner belongs to no workspace', 'UPSTREAM_FAILED');
          const tailCursor = await client.tailCursor(workspace.id);
          const channelName = `swarm-${input.swarmId.slice(0, 8)}`;
          const existing = (await client.listChannels(workspace.id)).find((c) => c.name === channelName);
          const channel = existing ?? (await client.createChannel(workspace.id, { name: channelName, displayTitle: `Swarm ${input.swarmId}` }));
          const result: SwarmBootResult = { busUrl: bus.url, workspaceId: workspace.id, channelId: channel.id, channelName, webUrl: `${bus.url}/app`, ...(tailCursor ? { tailCursor } : {}) };
          await store.setChannel(input.swarmId, { ...result, webUrl: result.webUrl });
          return result;
        } catch (err) {
          await recover(err);
          return busFailure(err, 'boot');
        }
      });
    },

    /** The agent's bot identity (`setup_nonce` makes a retry return the same bot); its token goes to this worker's vault only. */
    async swarmAddAgent(input: { swarmId: string; workspaceId: string; agentId: string; handle: string; displayName: string }): Promise<{ botUserId: string; botId: string; tokenId: string }> {
      return asActivity(async () => {
        try {
          const client = await owner();
          const { bot, token } = await client.createBot(input.workspaceId, {
            displayName: input.displayName,
            handle: input.handle,
            scopes: ['bot:write'],
            tokenName: 'keelson-swarm',
            setupNonce: `${input.swarmId}:${input.agentId}:bot`,
          });
          vault().put(input.swarmId, input.agentId, { tokenId: token.id, token: token.token });
          return { botUserId: bot.id, botId: bot.botId, tokenId: token.id };
        } catch (err) {
          await recover(err);
          return busFailure(err, 'creating an agent');
        }
      });
    },

    /** Posts as the owner (kickoff, the operator's steer, the rib's notices) under a deterministic nonce. */
    async swarmPost(input: { swarmId: string; workspaceId: string; channelId: string; body: string; nonce: string; threadRootId?: string }): Promise<{ messageId: string }> {
      return asActivity(async () => {
        try {
          const client = await owner();
          const posted = input.threadRootId
            ? await client.replyInThread(input.threadRootId, { body: input.body, nonce: input.nonce })
            : await client.postMessage(input.channelId, { body: input.body, nonce: input.nonce });
          return { messageId: posted.message.id };
        } catch (err) {
          if (err instanceof ClickClackError && err.nonceConflict) {
            const earlier = await (await owner()).messageByNonce(input.workspaceId, input.nonce);
            if (earlier) return { messageId: earlier.id };
          }
          await recover(err);
          return busFailure(err, 'posting');
        }
      });
    },

    /** Reads each message by id (as the owner) and projects what routing needs; a deleted one is `missing`. */
    async swarmHydrate(input: { swarmId: string; messageIds: string[] }): Promise<{ messages: HydratedMessage[] }> {
      return asActivity(async () => {
        try {
          const found = await hydrateWith(await owner(), input.messageIds);
          return {
            messages: input.messageIds.map((id, i): HydratedMessage => {
              const m = found[i];
              if (!m) return { id, channelId: null, authorId: '', authorKind: 'human', authorHandle: null, threadRootId: id, mentions: [], preview: '', missing: true };
              const flat = m.body.replace(/\s+/g, ' ').trim();
              return {
                id: m.id,
                channelId: m.channelId,
                authorId: m.authorId,
                authorKind: m.author?.kind ?? 'human',
                authorHandle: m.author?.handle ?? null,
                threadRootId: m.threadRootId,
                mentions: mentionsIn(m.body),
                preview: flat.length > swarmTuning.previewChars ? `${flat.slice(0, swarmTuning.previewChars - 1)}…` : flat,
              };
            }),
          };
        } catch (err) {
          await recover(err);
          return busFailure(err, 'reading messages');
        }
      });
    },

    /**
     * Follows the workspace's realtime socket from `afterCursor` (or the last heartbeated cursor of an
     * earlier attempt) and signals `swarmBusEvent` for every `message.created` and
     * `thread.reply_created` of the swarm's channel, in order, ids only. Runs until cancelled. A
     * dropped socket fails the attempt (Temporal retries it from the heartbeated cursor, and the
     * workflow drops what it already saw); 4001 resyncs from the tail after re-announcing the
     * channel's messages; a rejected credential (401/403, 1008) is final.
     */
    async swarmTail(input: { swarmId: string; workflowId: string; workspaceId: string; channelId: string; afterCursor?: string }): Promise<void> {
      const activity = Context.current();
      const details = activity.info.heartbeatDetails as { cursor?: string } | undefined;
      let cursor = details?.cursor ?? input.afterCursor;
      const handle = activity.client.workflow.getHandle(input.workflowId);
      const signal = (e: SwarmBusEventSignal) => handle.signal(swarmMessages.busEvent, e);
      const beat = setInterval(() => activity.heartbeat({ cursor }), 1000);
      try {
        for (;;) {
          let client: ClickClackClient;
          try {
            client = await owner();
          } catch (err) {
            await recover(err);
            return busFailure(err, 'tail');
          }
          let chain: Promise<void> = Promise.resolve();
          let failed: unknown;
          const sub = client.subscribe(input.workspaceId, cursor, (event) => {
            chain = chain.then(async () => {
              if (failed || !event.cursor) return;
              if (event.channelId === input.channelId && (event.type === 'message.created' || event.type === 'thread.reply_created')) {
                const messageId = typeof event.payload.message_id === 'string' ? event.payload.message_id : undefined;
                if (messageId) {
                  const rootId = typeof event.payload.root_message_id === 'string' ? event.payload.root_message_id : undefined;
                  await signal({ eventId: event.id, cursor: event.cursor, type: event.type, messageId, ...(rootId ? { rootId } : {}) });
                }
              }
              cursor = event.cursor;
              activity.heartbeat({ cursor });
            }).catch((err: unknown) => {
              failed ??= err;
              sub.close();
            });
          });
          const cancelled = new Promise<'cancelled'>((resolve) => activity.cancellationSignal.addEventListener('abort', () => resolve('cancelled'), { once: true }));
          const outcome = await Promise.race([sub.closed, cancelled]);
          sub.close();
          await chain;
          if (outcome === 'cancelled') throw new CancelledFailure('the swarm tail was cancelled');
          if (failed) throw failed;
          if (outcome.status === 401 || outcome.status === 403 || outcome.code === 1008) {
            need().bus.invalidateOwner();
            throw ApplicationFailure.create({ type: 'UPSTREAM_FAILED', message: `ClickClack credential revoked: the realtime socket closed (${outcome.status ?? outcome.code} ${outcome.reason})`, nonRetryable: true });
          }
          if (outcome.code === 4001) {
            // Resync: take the tail now, re-announce every message of the channel (the workflow keeps
            // only what it has not seen), then follow from the tail.
            const tail = await client.tailCursor(input.workspaceId);
            let after = 0;
            for (;;) {
              const page = await client.listMessages(input.channelId, { afterSeq: after, limit: 200 });
              for (const root of page.messages) {
                await signal({ eventId: '', cursor: cursor ?? '', type: 'message.created', messageId: root.id });
                if (root.replyCount > 0) {
                  const thread = await client.getThread(root.id, { latest: true, limit: 200 });
                  for (const r of thread.replies) await signal({ eventId: '', cursor: cursor ?? '', type: 'thread.reply_created', messageId: r.id, rootId: root.id });
                }
              }
              if (!page.hasNewer || page.newestSeq === null) break;
              after = page.newestSeq;
            }
            cursor = tail;
            activity.heartbeat({ cursor });
            continue;
          }
          await recover(new BusFailure(outcome.reason, false));
          throw ApplicationFailure.create({ type: 'SERVICE_UNAVAILABLE', message: `the realtime socket closed (${outcome.code} ${outcome.reason}); reconnecting from ${cursor ?? 'the start'}` });
        }
      } finally {
        clearInterval(beat);
      }
    },

    /**
     * One agent turn, run once per turn id `<swarmId>:<agentId>:<turnNo>`: a retry finds a settled
     * turn's result, waits out a live holder, or takes over a lapsed lease. The agent's token comes
     * from this worker's vault, else a new one is minted (same id on a retry, by nonce) and the old
     * one revoked. Messages are read with the agent's own token; the turn resumes the agent's provider
     * session with the fixed tool list, and the tools find the agent through the turn context.
     */
    async swarmTurn(input: SwarmTurnInput): Promise<SwarmTurnResult> {
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
    },

    /** Write mode: where writers branch from (origin's fetched default branch, else the root's HEAD branch), decided once. */
    async swarmWriteBase(input: { projectRoot: string }): Promise<WriteBase> {
      return asActivity(async () => {
        try {
          return await detectWriteBase(input.projectRoot, gitEnv());
        } catch (err) {
          throw ApplicationFailure.create({ type: 'BAD_USER_INPUT', message: `write mode: ${(err as Error).message}`, nonRetryable: true });
        }
      });
    },

    /** A writer's worktree lease and branch through the projects subgraph, cut from the write base. */
    async swarmLeaseWriter(input: { swarmId: string; projectId: string; agentId: string; base: WriteBase }): Promise<WriterLease & { head: string }> {
      return asActivity(async () => {
        const projects = need().projects;
        if (!projects) throw ApplicationFailure.nonRetryable('this worker cannot lease worktrees (no projects subgraph)', 'SERVICE_UNAVAILABLE');
        const lease = await projects.acquireWorkspace(input.projectId, `swarm ${input.swarmId.slice(0, 8)}: ${input.agentId} (writer)`);
        const head = await cutWriterWorktree(lease.path, input.base, gitEnv());
        return { leaseId: lease.id, path: lease.path, branch: lease.branch, head };
      });
    },

    /**
     * Releases the writers' worktrees (their branches stay) and, without origin, deletes each branch
     * only once the base holds its commits.
     */
    async swarmReleaseWriters(input: { root: string; base: WriteBase; writers: WriterLease[] }): Promise<{ kept: string[]; deleted: string[] }> {
      return asActivity(async () => {
        const projects = need().projects;
        const kept: string[] = [];
        const deleted: string[] = [];
        for (const w of input.writers) {
          await projects?.releaseWorkspace(w.leaseId).catch((err: unknown) => need().log?.warn({ err, lease: w.leaseId }, 'releasing a writer\'s worktree failed'));
          const outcome = input.base.origin ? 'kept' : await pruneWriterBranch(input.root, w.branch, input.base.branch, gitEnv());
          (outcome === 'kept' ? kept : deleted).push(w.branch);
        }
        return { kept, deleted };
      });
    },

    /** Appends the workflow's new swarm events (idempotent by index) and its state projection; new events become op log lines. */
    async swarmRecord(input: { swarmId: string; opId: string; fromIdx: number; events: SwarmEventRecord[]; state: { agents?: SwarmAgentView[]; turnsUsed?: number; conclusion?: string | null } }): Promise<void> {
      await asActivity(async () => {
        const { store, ops } = need();
        const appended = await store.record(input.swarmId, input.fromIdx, input.events, input.state);
        for (const e of input.events.slice(input.events.length - appended)) {
          const line = opLine(e);
          if (line) await ops.log(input.opId, line);
        }
      });
    },

    /**
     * Revokes every token the swarm ever recorded, and sweeps the tokens a turn may have minted
     * without the workflow learning of it (its attempt was cancelled or gave up): each is recovered
     * by its nonce and revoked. Safe to repeat.
     */
    async swarmRevoke(input: { swarmId: string; workspaceId: string; agents: { agentId: string; botId: string; tokenIds: string[]; unsettled: { turnNo: number; generation: number }[] }[] }): Promise<{ revoked: string[] }> {
      return asActivity(async () => {
        try {
          const client = await owner();
          const revoked: string[] = [];
          for (const a of input.agents) {
            const ids = new Set(a.tokenIds);
            for (const u of a.unsettled) {
              const swept = await client.createBotToken(input.workspaceId, a.botId, { name: 'keelson-swarm', scopes: ['bot:write'], setupNonce: tokenNonce(input.swarmId, a.agentId, u.generation, u.turnNo) });
              ids.add(swept.id);
            }
            for (const id of ids) {
              await client.revokeBotToken(id).catch((err: unknown) => {
                if (!(err instanceof ClickClackError && err.status === 404)) throw err;
              });
              revoked.push(id);
            }
          }
          vault().forget(input.swarmId);
          return { revoked };
        } catch (err) {
          await recover(err);
          throw err;
        }
      });
    },

    /** The swarm's end: its final events and state, then the op settled (DONE succeeds, STOPPED is cancelled, the rest fail). */
    async swarmFinish(input: {
      swarmId: string;
      opId: string;
      fromIdx: number;
      events: SwarmEventRecord[];
      status: Exclude<SwarmStatus, 'RUNNING'>;
      conclusion: string | null;
      error: string | null;
      agents: SwarmAgentView[];
      turnsUsed: number;
      /** Write mode: the base, what landed, the branches kept; never a pull request (no forge here). */
      write?: { base: WriteBase; merges: { agent: string; sha: string; result: string; landed: boolean }[]; keptBranches: string[]; deletedBranches: string[] };
    }): Promise<void> {
      await asActivity(async () => {
        const { store, ops } = need();
        await store.record(input.swarmId, input.fromIdx, input.events, { status: input.status, conclusion: input.conclusion, error: input.error, agents: input.agents, turnsUsed: input.turnsUsed });
        const write = input.write ? { ...input.write, pullRequests: 'none: no forge is configured here, so no pull request was opened or claimed; writers\' commits stay on their branches until the base holds them' } : undefined;
        if (input.status === 'DONE') {
          await ops.completeOp(input.opId, { swarmId: input.swarmId, status: input.status, turnsUsed: input.turnsUsed, conclusion: input.conclusion?.slice(0, 4000) ?? null, ...(write ? { write } : {}) });
        } else {
          await ops.settleOp(input.opId, input.status === 'STOPPED' ? 'CANCELLED' : 'FAILED', input.status === 'STOPPED' ? (input.error ?? 'stopped') : `${input.status}: ${input.error ?? ''}`.trim());
        }
        vault().forget(input.swarmId);
      });
    },
  };

  /**
   * The agent's token for this turn: the vault's when it is the newest recorded (or one this worker
   * minted and the workflow has not recorded yet); otherwise a new one under the turn's nonce, the
   * old one revoked.
   */
  async function agentToken(input: SwarmTurnInput): Promise<{ held: HeldToken; newTokenId?: string }> {
    const latest = input.tokenIds.at(-1);
    const held = vault().get(input.swarmId, input.agentId);
    if (held && held.tokenId === latest) return { held };
    if (held && !input.tokenIds.includes(held.tokenId)) return { held, newTokenId: held.tokenId };
    try {
      const client = await owner();
      const minted = await client.createBotToken(input.workspaceId, input.botId, {
        name: 'keelson-swarm',
        scopes: ['bot:write'],
        setupNonce: tokenNonce(input.swarmId, input.agentId, input.tokenIds.length, input.turnNo),
      });
      if (latest && latest !== minted.id) {
        await client.revokeBotToken(latest).catch((err: unknown) => {
          if (!(err instanceof ClickClackError && err.status === 404)) throw err;
        });
      }
      const fresh = { tokenId: minted.id, token: minted.token };
      vault().put(input.swarmId, input.agentId, fresh);
      return { held: fresh, newTokenId: minted.id };
    } catch (err) {
      await recover(err);
      return busFailure(err, 'minting an agent token');
    }
  }
}

/** The op's log line for a swarm event (the generic run tooling follows swarms through `opFrames`). */
function opLine(e: SwarmEventRecord): string | undefined {
  const p = e.payload;
  switch (e.type) {
    case 'SWARM_STARTED':
      return 'swarm started';
    case 'AGENT_JOINED':
      return `agent ${p.agentId} joined as @${p.handle}${p.lead ? ' (lead)' : ''}${p.writer ? ' (writer)' : ''}`;
    case 'TURN_STARTED':
      return `turn ${p.turnNo} of ${p.agentId} started (${p.messageIds?.length ?? 0} message(s))`;
    case 'TURN_ENDED':
      return `turn ${p.turnNo} of ${p.agentId} ended: ${p.status}${p.reason ? ` (${p.reason})` : ''}`;
    case 'AGENT_RETIRED':
      return `agent ${p.agentId} retired: ${p.reason}`;
    case 'SWARM_NUDGED':
      return `the swarm was quiet: nudged the lead (${p.nudge})`;
    case 'SWARM_CONCLUDED':
      return 'the lead reported a conclusion';
    case 'SWARM_ENDED':
      return `swarm ended ${p.status}${p.reason ? `: ${p.reason}` : ''}`;
    default:
      return undefined;
  }
}

export type SwarmActivities = ReturnType<typeof createSwarmActivities>;
