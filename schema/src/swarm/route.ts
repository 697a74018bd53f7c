/**
 * Who wakes for a message (seed 001 "Routing is a pure function"). Pure: no I/O, no clock, no
 * randomness, no provider, so the swarm workflow runs it in its sandbox and replays it from history.
 * Implements SWARM.md §3's routing table:
 *
 * | message | wakes |
 * | --- | --- |
 * | `@handle` mention | that agent (adds to every row) |
 * | reply by the agent that started the thread | every agent in the thread |
 * | reply by any other agent | the thread's starter |
 * | reply by a human, or in a thread a human started | every agent in the thread |
 * | human, top-level, unaddressed | the lead |
 * | agent, top-level, unaddressed | nobody |
 * | the rib's own posts (run and gate notices) | nobody |
 *
 * The author never wakes itself, and an inactive (capped or failed) agent is never returned.
 */

/** The small projection of a hydrated message routing needs (never its body). */
export interface RoutableMessage {
  id: string;
  /** The bus user id of the author (ClickClack stamps it from the token). */
  authorId: string;
  authorKind: 'human' | 'bot';
  /** The root's id; equal to `id` for a top-level message. */
  threadRootId: string;
  /** Lower-cased `@handles` found in the body. */
  mentions: readonly string[];
  /** A notice the rib itself posted (kickoff excluded): wakes nobody. */
  ribPost: boolean;
}

/** One agent of the roster as routing sees it. */
export interface RouteAgent {
  id: string;
  handle: string;
  /** The agent's bus identity (its bot user). */
  botUserId: string;
  lead: boolean;
  /** False once capped or failed: never woken. */
  active: boolean;
}

export interface RouteInput {
  message: RoutableMessage;
  roster: readonly RouteAgent[];
  /** Agent ids that have posted in the message's thread (its root included), before this message. */
  threadParticipants: readonly string[];
  /** The agent that started the thread; absent when a human (or anyone outside the roster) did. */
  threadStarter?: string;
}

/** The agent ids to wake, in roster order. */
export function route(input: RouteInput): string[] {
  const { message, roster } = input;
  if (message.ribPost) return [];
  const author = roster.find((a) => a.botUserId === message.authorId);
  const wake = new Set<string>();
  const mentioned = new Set(message.mentions.map((m) => m.toLowerCase()));
  for (const agent of roster) if (mentioned.has(agent.handle.toLowerCase())) wake.add(agent.id);

  const isReply = message.threadRootId !== message.id;
  if (isReply) {
    const everyone = () => input.threadParticipants.forEach((id) => wake.add(id));
    if (!author || input.threadStarter === undefined) everyone();
    else if (author.id === input.threadStarter) everyone();
    else wake.add(input.threadStarter);
  } else if (!author && wake.size === 0) {
    const lead = roster.find((a) => a.lead);
    if (lead) wake.add(lead.id);
  }

  return roster.filter((a) => wake.has(a.id) && a.active && a.id !== author?.id).map((a) => a.id);
}

/** `@handles` in a body, lower-cased and unique, in order of first appearance (as ClickClack resolves them). */
export function mentionsIn(body: string): string[] {
  const out: string[] = [];
  for (const m of body.matchAll(/@([A-Za-z0-9][A-Za-z0-9_-]{1,31})/g)) {
    const handle = m[1]!.toLowerCase();
    if (!out.includes(handle)) out.push(handle);
  }
  return out;
}
