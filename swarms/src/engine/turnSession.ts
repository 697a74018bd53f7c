import type { EvidenceItem } from '@keelson/schema';
import { ClickClackError, type ClickClackClient } from '../bus/clickclack';
import { BusFailure, type AgentTurn, type BusMessage, type RosterLine, type SwarmCommand } from '@keelson/rib-swarm';

export interface TurnSessionOptions {
  swarmId: string;
  agentId: string;
  handle: string;
  turnNo: number;
  lead: boolean;
  writer: boolean;
  /** The swarm runs in write mode (the lead may choose writers and merge). */
  writeMode: boolean;
  /** The agent's own identity on the bus. */
  agent: ClickClackClient;
  workspaceId: string;
  channelId: string;
  task: string;
  evidence: readonly EvidenceItem[];
  roster: readonly RosterLine[];
  /** Signals the workflow that the swarm just wrote this message (local ingestion), before the tool returns. */
  announce(messageId: string): Promise<void>;
  /** The bus failed: the engine aborts the turn. */
  onBusFailure(failure: BusFailure): void;
  /** Lands a reviewed SHA (write mode without origin, lead only); absent otherwise. */
  merge?(input: { agent: string; sha: string }): Promise<string>;
}

/**
 * What one running agent turn can do, bound to that agent: the agent tools find it through the turn
 * context (which the engine sets and the model cannot forge), so every post carries this agent's
 * own token and ClickClack stamps this agent as the author. Posts use the deterministic nonce
 * `<swarmId>:<agentId>:t<turn>:<k>`: a retried turn re-posting the same body gets the original
 * message back, and nothing is duplicated in the channel.
 */
export class TurnSession implements AgentTurn {
  readonly posted: string[] = [];
  readonly commands: SwarmCommand[] = [];
  /** What `chat_merge` landed (or was refused) in this turn. */
  readonly merges: { agent: string; sha: string; result: string; landed: boolean }[] = [];
  private posts = 0;

  constructor(readonly opts: TurnSessionOptions) {}

  private nonce(): string {
    this.posts += 1;
    return `${this.opts.swarmId}:${this.opts.agentId}:t${this.opts.turnNo}:${this.posts}`;
  }

  /** Runs a bus call; an unreachable bus or a rejected credential stops the turn. */
  private async bus<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      if (err instanceof ClickClackError && (err.unreachable || err.credentialRevoked)) {
        const failure = new BusFailure(err.message, err.credentialRevoked);
        this.opts.onBusFailure(failure);
        throw failure;
      }
      throw err;
    }
  }

  /**
   * Posts `body` top-level, or in the thread of `inReplyTo` (always to its root: ClickClack rejects
   * a reply to a reply). The workflow hears of it before this resolves.
   */
  async post(body: string, inReplyTo?: string): Promise<{ message: BusMessage; replayed: boolean; recovered: boolean }> {
    const o = this.opts;
    let rootId: string | undefined;
    if (inReplyTo) {
      const target = await this.bus(() => o.agent.getMessage(inReplyTo)).catch((err: unknown) => {
        if (err instanceof ClickClackError && err.status === 404) throw new Error(`no message ${inReplyTo} in this swarm's channel`);
        throw err;
      });
      if (target.channelId !== o.channelId) throw new Error(`message ${inReplyTo} is not in this swarm's channel`);
      rootId = target.threadRootId;
    }
    const nonce = this.nonce();
    let result: { message: BusMessage; replayed: boolean; recovered: boolean };
    try {
      const r = await this.bus(() => (rootId ? o.agent.replyInThread(rootId, { body, nonce }) : o.agent.postMessage(o.channelId, { body, nonce })));
      result = { ...r, recovered: false };
    } catch (err) {
      if (!(err instanceof ClickClackError && err.nonceConflict)) throw err;
      // This turn posted under this nonce before a restart, with other words: that post stands.
      const earlier = await this.bus(() => o.agent.messageByNonce(o.workspaceId, nonce));
      if (!earlier) throw err;
      result = { message: earlier, replayed: true, recovered: true };
    }
    this.posted.push(result.message.id);
    await o.announce(result.message.id);
    return result;
  }

  async readChannel(limit: number): Promise<BusMessage[]> {
    return (await this.bus(() => this.opts.agent.listMessages(this.opts.channelId, { limit }))).messages;
  }

  async readThread(rootOrReply: string, limit: number): Promise<{ root: BusMessage; replies: BusMessage[] }> {
    const target = await this.bus(() => this.opts.agent.getMessage(rootOrReply));
    if (target.channelId !== this.opts.channelId) throw new Error(`message ${rootOrReply} is not in this swarm's channel`);
    return this.bus(() => this.opts.agent.getThread(target.threadRootId, { latest: true, limit }));
  }

  command(c: SwarmCommand): void {
    this.commands.push(c);
  }

  /** `chat_merge`: lands a reviewed SHA (write mode without origin), recording the outcome either way. */
  async land(input: { agent: string; sha: string }): Promise<string> {
    if (!this.opts.merge) throw new Error('merging is only available to the lead, in write mode without an origin remote');
    try {
      const result = await this.opts.merge(input);
      this.merges.push({ ...input, result, landed: true });
      return result;
    } catch (err) {
      this.merges.push({ ...input, result: (err as Error).message, landed: false });
      throw err;
    }
  }
}
