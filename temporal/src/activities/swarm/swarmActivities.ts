import { ApplicationFailure } from '@temporalio/common';
import type { BusMessage } from '@keelson/rib-swarm';
import { ClickClackError, cutWriterWorktree, detectWriteBase, pruneWriterBranch, publishWriterBranch, type PublishedBranch, type WriteBase } from '@keelson/swarms';
import { mentionsIn, swarmTuning, type SwarmAgentView, type SwarmEventRecord, type SwarmStatus } from '@keelson/schema';
import { asActivity } from '../failures';
import type { HydratedMessage, SwarmActivityDeps, SwarmBootResult, WriterLease } from './swarmTypes';
import { busFailure, opLine, swarmContext, tokenNonce, type SwarmContext } from './swarmContext';
import { swarmTailActivity } from './swarmTail';
import { swarmTurnActivity } from './swarmTurn';

/** The activities of the `swarm` workflow. */
export function createSwarmActivities(deps: SwarmActivityDeps | undefined) {
  const c = swarmContext(deps);
  const { swarmRecord, swarmFinish } = swarmEventActivities(c);
  return {
    ...swarmBusActivities(c),
    swarmTail: swarmTailActivity(c),
    swarmTurn: swarmTurnActivity(c),
    ...swarmWriterActivities(c),
    ...swarmPublishActivity(c),
    swarmRecord,
    ...swarmTokenActivities(c),
    swarmFinish,
  };
}

export type SwarmActivities = ReturnType<typeof createSwarmActivities>;

/** The bus as the owner: the swarm's channel, its agents' bot identities, posting and reading messages. */
function swarmBusActivities(c: SwarmContext) {
  const { need, vault, owner, recover, hydrateWith } = c;
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
          return { messages: input.messageIds.map((id, i) => hydratedOf(id, found[i])) };
        } catch (err) {
          await recover(err);
          return busFailure(err, 'reading messages');
        }
      });
    },
  };
}

/** A message as routing needs it, from what the owner read of it; `missing` when it is gone. */
function hydratedOf(id: string, m: BusMessage | undefined): HydratedMessage {
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
}

/** Write mode's writers: the write base, their worktree leases and branches, and their release. */
function swarmWriterActivities(c: SwarmContext) {
  const { need, gitEnv } = c;
  return {
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
  };
}

/** Write mode with origin: publishing the kept writer branches at a DONE swarm's end. */
function swarmPublishActivity(c: SwarmContext) {
  const { need, gitEnv } = c;
  return {
    /**
     * Write mode with origin, at a DONE swarm's end: when the project opted in, each kept writer
     * branch with commits is checked for AI attribution, pushed to origin, and offered as a draft pull
     * request through the operator's command. Never merges. Without the opt-in nothing leaves the machine.
     */
    async swarmPublish(input: { swarmId: string; projectId: string; root: string; base: WriteBase; branches: string[] }): Promise<SwarmPublishReport> {
      return asActivity(async () => {
        const settings = need().publish;
        const name = settings?.projects.length ? (await need().projects?.project(input.projectId))?.name : undefined;
        if (!settings || !(settings.projects.includes(input.projectId) || (name !== undefined && settings.projects.includes(name)))) {
          return { pushed: false, note: `none: project ${name ?? input.projectId} has not opted in to pushing (KEELSON_SWARM_PUBLISH_PROJECTS), so writers' commits stay on their local branches`, branches: [] };
        }
        const branches: PublishedBranch[] = [];
        const task = (await need().store.get(input.swarmId))?.task ?? '';
        const title = `swarm ${input.swarmId.slice(0, 8)}: ${task.split('\n')[0]!.slice(0, 100)}`;
        for (const branch of input.branches) {
          const body = `Opened as a draft by Keelson Mesh swarm ${input.swarmId} (write mode). Task:\n\n${task.slice(0, 4000)}`;
          branches.push(await publishWriterBranch({ root: input.root, base: input.base, branch, title, body, settings, env: gitEnv() }));
        }
        const drafts = branches.filter((b) => b.pullRequest).length;
        return { pushed: branches.some((b) => b.pushed), note: `${branches.filter((b) => b.pushed).length} branch(es) pushed, ${drafts} draft pull request(s) opened; nothing is ever merged`, branches };
      });
    },
  };
}

/** The swarm's events and state: appended as the workflow goes, and its end settling the op. */
function swarmEventActivities(c: SwarmContext) {
  const { need, vault } = c;
  return {
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
      /** Write mode: the base, what landed, the branches kept, and (with origin) what was published. */
      write?: { base: WriteBase; merges: { agent: string; sha: string; result: string; landed: boolean }[]; keptBranches: string[]; deletedBranches: string[]; published?: SwarmPublishReport };
    }): Promise<void> {
      await asActivity(async () => {
        const { store, ops } = need();
        // The op settles first (both writes are idempotent, a retry redoes what is missing): whoever
        // sees the swarm ended sees its op settled too.
        const write = input.write ? { ...withoutPublished(input.write), pullRequests: pullRequestsOf(input.write) } : undefined;
        if (input.status === 'DONE') {
          await ops.completeOp(input.opId, { swarmId: input.swarmId, status: input.status, turnsUsed: input.turnsUsed, conclusion: input.conclusion?.slice(0, 4000) ?? null, ...(write ? { write } : {}) });
        } else {
          await ops.settleOp(input.opId, input.status === 'STOPPED' ? 'CANCELLED' : 'FAILED', input.status === 'STOPPED' ? (input.error ?? 'stopped') : `${input.status}: ${input.error ?? ''}`.trim());
        }
        await store.record(input.swarmId, input.fromIdx, input.events, { status: input.status, conclusion: input.conclusion, error: input.error, agents: input.agents, turnsUsed: input.turnsUsed });
        vault().forget(input.swarmId);
      });
    },
  };
}

/** The agents' tokens: every one revoked at the swarm's end. */
function swarmTokenActivities(c: SwarmContext) {
  const { vault, owner, recover } = c;
  return {
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
  };
}

/** What write mode published at a swarm's end. */
export interface SwarmPublishReport {
  pushed: boolean;
  note: string;
  branches: PublishedBranch[];
}

function withoutPublished<T extends { published?: unknown }>(write: T): Omit<T, 'published'> {
  const { published: _published, ...rest } = write;
  return rest;
}

/** The op result's `pullRequests`: the published branches, or why none were. */
function pullRequestsOf(write: { base: WriteBase; published?: SwarmPublishReport }): string | { note: string; branches: PublishedBranch[] } {
  if (write.published?.branches.length) return { note: write.published.note, branches: write.published.branches };
  if (write.published) return write.published.note;
  return write.base.origin
    ? 'none: no pull request was opened or claimed; writers\' commits stay on their branches'
    : 'none: no forge is configured here, so no pull request was opened or claimed; writers\' commits stay on their branches until the base holds them';
}
