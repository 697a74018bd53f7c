import { randomUUID } from 'node:crypto';
import type { BusMessage } from '@keelson/rib-swarm';
import type { OpStore, ProjectsApi } from '@keelson/runs';
import { isTerminalSwarmStatus, isUuid, MeshError, parseInput, startSwarmInputSchema, swarmStatuses, type SwarmStatus } from '@keelson/schema';
import type { Logger } from '@keelson/service';
import { z } from 'zod';
import { ClickClackError } from '../bus/clickclack';
import type { BusAccess } from '../engine/busAccess';
import type { SwarmsExecutor } from '../executor';
import type { SwarmsSettings } from '../settings';
import type { SwarmRecord, SwarmStore } from '../store/swarmStore';
import { launchSwarm } from './launch';

export interface SwarmServiceDeps {
  store: SwarmStore;
  ops: OpStore;
  bus: BusAccess;
  executor: SwarmsExecutor;
  projects: ProjectsApi;
  settings: SwarmsSettings;
  log: Logger;
}

/** A message as the GraphQL face shows it. */
export interface MessageView {
  id: string;
  author: { id: string; kind: string; handle: string | null; displayName: string; agentId: string | null };
  body: string;
  threadRootId: string;
  seq: number | null;
  replyCount: number;
  createdAt: string | null;
}

const idSchema = z.string().refine(isUuid, 'expected a swarm id');
const bodySchema = z.string().refine((s) => s.trim() !== '', 'must not be empty').pipe(z.string().max(8000, 'must be at most 8000 characters'));
const reasonSchema = z.string().max(500, 'must be at most 500 characters').nullish();
const pageSchema = z.object({
  first: z.number().int().min(0).max(200).nullish().transform((v) => v ?? 50),
  after: z.string().regex(/^(0|[1-9][0-9]{0,14})$/, 'expected a cursor previously received from this connection').nullish(),
});

/**
 * The swarms domain: start a swarm (one durable op and its workflow, created only once the bus is
 * there), stop and steer it, speak in it as the operator, and read its conversation from the bus.
 */
export class SwarmService {
  constructor(private readonly deps: SwarmServiceDeps) {}

  async byIds(ids: readonly string[]): Promise<SwarmRecord[]> {
    return this.deps.store.byIds(ids.filter(isUuid));
  }

  async require(id: string): Promise<SwarmRecord> {
    const swarmId = parseInput(idSchema, id, 'id');
    const swarm = await this.deps.store.get(swarmId);
    if (!swarm) throw new MeshError('NOT_FOUND', `swarm ${JSON.stringify(id)} does not exist`);
    return swarm;
  }

  async list(args: { status?: string | null; first?: number | null; after?: string | null }): Promise<{ rows: SwarmRecord[]; first: number }> {
    const page = parseInput(pageSchema, { first: args.first, after: args.after });
    const status = args.status == null ? undefined : parseInput(z.enum(swarmStatuses), args.status, 'status');
    const rows = await this.deps.store.list({ status: status as SwarmStatus | undefined, first: page.first + 1, ...(page.after != null ? { beforeSeq: Number(page.after) } : {}) });
    return { rows, first: page.first };
  }

  temporalUiUrl(workflowId: string): string | null {
    return this.deps.executor.uiUrl(workflowId);
  }

  /**
   * Starts a swarm and returns it at once (RUNNING; its op id exists). Without a bus the start is
   * SERVICE_UNAVAILABLE with the reason, and nothing is created.
   */
  async start(raw: unknown): Promise<SwarmRecord> {
    const input = parseInput(startSwarmInputSchema, raw);
    const { bus } = this.deps;
    if (bus.setup.mode === 'UNAVAILABLE') throw new MeshError('SERVICE_UNAVAILABLE', bus.setup.reason);
    let project: { id: string; name: string; rootPath: string } | null = null;
    if (input.projectId) {
      project = await this.deps.projects.project(input.projectId);
      if (!project) throw new MeshError('NOT_FOUND', `project ${JSON.stringify(input.projectId)} does not exist`);
    }
    try {
      await bus.ensure();
    } catch (err) {
      throw new MeshError('SERVICE_UNAVAILABLE', `the swarm's bus is not available: ${(err as Error).message}`);
    }
    const launched = await launchSwarm(
      { ops: this.deps.ops, swarms: this.deps.store, executor: this.deps.executor, heartbeatTimeoutMs: this.deps.settings.heartbeatTimeoutMs },
      { input, bus: { mode: bus.setup.mode, url: bus.setup.url }, project },
    );
    return (await this.deps.store.get(launched.swarmId))!;
  }

  /** Stops a running swarm (its turns interrupted, every token revoked); an ended one is returned as is. */
  async stop(id: string, rawReason?: string | null): Promise<SwarmRecord> {
    const swarm = await this.require(id);
    const reason = parseInput(reasonSchema, rawReason, 'reason');
    if (isTerminalSwarmStatus(swarm.status)) return swarm;
    await this.deps.executor.stop(swarm.temporalWorkflowId, reason ?? null);
    return swarm;
  }

  /**
   * The operator's note, posted into the channel as the operator (it wakes the lead); refused once the
   * swarm has ended. The same path as `steerOp` on the swarm's op: the executor's one swarm steer.
   */
  async steer(id: string, rawNote: string): Promise<{ accepted: boolean; reason: string | null }> {
    const note = parseInput(bodySchema, rawNote, 'note');
    const swarm = await this.require(id);
    if (isTerminalSwarmStatus(swarm.status)) return { accepted: false, reason: `the swarm has ended (${swarm.status})` };
    try {
      const r = await this.deps.executor.steer(swarm.temporalWorkflowId, note, null);
      if (r.outcome === 'accepted') return { accepted: true, reason: null };
      if (r.outcome === 'not-running') return { accepted: false, reason: 'the swarm has ended' };
      return { accepted: false, reason: r.outcome === 'refused' ? r.reason : r.message };
    } catch (err) {
      const now = await this.deps.store.get(swarm.id);
      if (now && isTerminalSwarmStatus(now.status)) return { accepted: false, reason: `the swarm has ended (${now.status})` };
      throw err;
    }
  }

  /** The operator speaking in the swarm (top-level, or in a thread); it routes like any human post. */
  async post(id: string, rawBody: string, threadRootId?: string | null): Promise<MessageView> {
    const body = parseInput(bodySchema, rawBody, 'body');
    const swarm = await this.require(id);
    if (isTerminalSwarmStatus(swarm.status)) throw new MeshError('CONFLICT', `swarm ${swarm.id} has ended (${swarm.status}); nobody would read this`);
    if (!swarm.channelId || !swarm.workspaceId) throw new MeshError('CONFLICT', `swarm ${swarm.id} has no channel yet; retry in a moment`);
    const owner = await this.owner();
    const nonce = `${swarm.id}:op:post:${randomUUID()}`;
    const posted = await this.bus(async () => {
      if (threadRootId) {
        const target = await owner.getMessage(threadRootId);
        if (target.channelId !== swarm.channelId) throw new MeshError('BAD_USER_INPUT', `threadRootId: message ${threadRootId} is not in this swarm's channel`);
        return owner.replyInThread(target.threadRootId, { body, nonce });
      }
      return owner.postMessage(swarm.channelId!, { body, nonce });
    });
    try {
      await this.deps.executor.announce(swarm.temporalWorkflowId, posted.message.id);
    } catch (err) {
      // The tail delivers it anyway; local ingestion only makes it immediate.
      this.deps.log.warn({ err, swarmId: swarm.id }, 'announcing an operator post failed');
    }
    return this.view(swarm, posted.message);
  }

  /** Top-level messages of the swarm's channel after `after` (a channel sequence), oldest first. */
  async messages(swarm: SwarmRecord, args: { first?: number | null; after?: string | null }): Promise<{ rows: MessageView[]; hasNext: boolean }> {
    const page = parseInput(pageSchema, args);
    if (!swarm.channelId || page.first === 0) return { rows: [], hasNext: false };
    const owner = await this.owner();
    const got = await this.bus(() => owner.listMessages(swarm.channelId!, { afterSeq: page.after != null ? Number(page.after) : 0, limit: Math.min(200, page.first) }));
    return { rows: got.messages.map((m) => this.view(swarm, m)), hasNext: got.hasNewer };
  }

  /** A thread of the swarm's channel: its root and replies. */
  async thread(swarm: SwarmRecord, rootId: string): Promise<{ root: MessageView; replies: MessageView[] }> {
    if (!swarm.channelId) throw new MeshError('NOT_FOUND', `swarm ${swarm.id} has no channel yet`);
    const owner = await this.owner();
    const target = await this.bus(() => owner.getMessage(rootId));
    if (target.channelId !== swarm.channelId) throw new MeshError('NOT_FOUND', `message ${rootId} is not in swarm ${swarm.id}'s channel`);
    const thread = await this.bus(() => owner.getThread(target.threadRootId, { limit: 200 }));
    return { root: this.view(swarm, thread.root), replies: thread.replies.map((m) => this.view(swarm, m)) };
  }

  private view(swarm: SwarmRecord, m: BusMessage): MessageView {
    const agent = swarm.agents.find((a) => a.botUserId === m.authorId);
    return {
      id: m.id,
      author: { id: m.authorId, kind: m.author?.kind ?? 'human', handle: m.author?.handle ?? null, displayName: m.author?.displayName ?? m.authorId, agentId: agent?.id ?? null },
      body: m.body,
      threadRootId: m.threadRootId,
      seq: m.channelSeq,
      replyCount: m.replyCount,
      createdAt: m.createdAt,
    };
  }

  private async owner() {
    try {
      return await this.deps.bus.ownerClient();
    } catch (err) {
      throw new MeshError('SERVICE_UNAVAILABLE', `the swarm's bus is not available: ${(err as Error).message}`);
    }
  }

  /** A bus read or write: a missing message is NOT_FOUND; an unreachable bus SERVICE_UNAVAILABLE. */
  private async bus<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      if (err instanceof ClickClackError) {
        if (err.status === 404) throw new MeshError('NOT_FOUND', err.message);
        if (err.credentialRevoked) this.deps.bus.invalidateOwner();
        throw new MeshError(err.unreachable ? 'SERVICE_UNAVAILABLE' : 'UPSTREAM_FAILED', `ClickClack: ${err.message}`);
      }
      throw err;
    }
  }
}
