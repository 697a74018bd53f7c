import { randomUUID } from 'node:crypto';
import type { EvidenceItem } from '@keelson/schema';

/** A user or bot of the swarm's channel as an agent sees it. */
export interface BusUser {
  id: string;
  kind: 'human' | 'bot';
  handle: string | null;
  displayName: string;
}

/** A message of the swarm's channel as an agent sees it (the bus client maps ClickClack's wire shape to it). */
export interface BusMessage {
  id: string;
  channelId: string | null;
  authorId: string;
  author: BusUser | null;
  body: string;
  nonce: string | null;
  kind: string;
  /** The root's id; equal to `id` for a root. */
  threadRootId: string;
  /** The channel sequence of a root; null for a thread reply. */
  channelSeq: number | null;
  createdAt: string | null;
  replyCount: number;
}

/** Something an agent asked of the engine during a turn; the workflow validates and applies it. */
export type SwarmCommand =
  | { kind: 'spawn'; name: string; role: string; writer: boolean }
  | { kind: 'done'; summary?: string }
  | { kind: 'report'; conclusion: string };

/** One agent of the roster as a turn shows it. */
export interface RosterLine {
  id: string;
  handle: string;
  role: string;
  lead: boolean;
  writer: boolean;
  status: string;
  finished: boolean;
}

/** The bus failed under a turn (unreachable or the credential rejected): the turn stops and is retried. */
export class BusFailure extends Error {
  constructor(
    message: string,
    readonly revoked: boolean,
  ) {
    super(message);
    this.name = 'BusFailure';
  }
}

/**
 * What the agent tools ask of one running agent turn, bound to that agent. The swarms domain's
 * engine implements it (`TurnSession` in `@keelson/swarms`); the rib only defines what its tools call.
 */
export interface AgentTurn {
  readonly opts: {
    readonly agentId: string;
    readonly lead: boolean;
    readonly writeMode: boolean;
    readonly task: string;
    readonly evidence: readonly EvidenceItem[];
    readonly roster: readonly RosterLine[];
  };
  /** Posts top-level, or in the thread of `inReplyTo`, as this agent. */
  post(body: string, inReplyTo?: string): Promise<{ message: BusMessage; replayed: boolean; recovered: boolean }>;
  readChannel(limit: number): Promise<BusMessage[]>;
  readThread(rootOrReply: string, limit: number): Promise<{ root: BusMessage; replies: BusMessage[] }>;
  command(c: SwarmCommand): void;
  /** `chat_merge`: lands a reviewed SHA. */
  land(input: { agent: string; sha: string }): Promise<string>;
}

const live = new Map<string, AgentTurn>();

/** The turn-context field that names a live turn (its value is an unguessable key). */
export const TURN_CONTEXT_KEY = 'swarmTurn';

/** Makes a turn reachable from tools for the length of its turn; returns the turn context to pass. */
export function bindTurn(turn: AgentTurn): { turnContext: Record<string, string>; unbind(): void } {
  const key = randomUUID();
  live.set(key, turn);
  return { turnContext: { [TURN_CONTEXT_KEY]: key }, unbind: () => live.delete(key) };
}

/** The live turn a tool call belongs to, from the turn context the engine set; undefined outside a swarm turn. */
export function turnOf(turnContext: Readonly<Record<string, unknown>> | undefined): AgentTurn | undefined {
  const key = turnContext?.[TURN_CONTEXT_KEY];
  return typeof key === 'string' ? live.get(key) : undefined;
}
