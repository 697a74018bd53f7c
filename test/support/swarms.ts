import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ClickClackClient, MANAGED_OWNER } from '@keelson/swarms';
import { clickclackBinary, STANDIN_BIN } from '@keelson/clickclack-standin';
import { freePort } from '@keelson/service';
import { gqlData, subscribe } from './client';

export { clickclackBinary, freePort, STANDIN_BIN };

const run = promisify(execFile);


/**
 * The environment of a mesh that runs its own ClickClack (managed mode): the real binary when
 * CLICKCLACK_BIN is set, else the stand-in, on a free loopback port; no external server configured.
 */
export async function managedBusEnv(): Promise<NodeJS.ProcessEnv> {
  return { CLICKCLACK_BIN: clickclackBinary(), CLICKCLACK_PORT: String(await freePort()), CLICKCLACK_URL: undefined, CLICKCLACK_TOKEN: undefined };
}

export interface SwarmView {
  id: string;
  status: string;
  turnsUsed: number;
  conclusion: string | null;
  error: string | null;
  temporalWorkflowId: string;
  temporalUiUrl: string | null;
  op: { id: string; kind: string; status: string };
  channel: { workspaceId: string; channelId: string; name: string; webUrl: string | null };
  agents: { id: string; handle: string; lead: boolean; writer: boolean; status: string; turns: number; inboxDepth: number; finished: boolean; botUserId: string | null }[];
}

export const SWARM_FIELDS = `id status turnsUsed conclusion error temporalWorkflowId temporalUiUrl op { id kind status }
  channel { workspaceId channelId name webUrl } agents { id handle lead writer status turns inboxDepth finished botUserId }`;

export async function getSwarm(url: string, id: string): Promise<SwarmView> {
  return (await gqlData<{ swarm: SwarmView }>(url, `query ($id: ID!) { swarm(id: $id) { ${SWARM_FIELDS} } }`, { id })).swarm;
}

/** Polls `swarm(id)` until `done` holds. */
export async function waitForSwarm(url: string, id: string, done: (s: SwarmView) => boolean, timeoutMs = 90_000): Promise<SwarmView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await getSwarm(url, id);
    if (done(s)) return s;
    if (Date.now() > deadline) throw new Error(`swarm ${id} is still ${JSON.stringify({ status: s.status, turns: s.turnsUsed, agents: s.agents.map((a) => [a.id, a.status, a.turns, a.inboxDepth]) })}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

/**
 * A client of the mesh's managed ClickClack as its owner, signed in the way an operator would: the
 * bus's binary and data directory from `swarmServer`, a magic link from ClickClack's own `admin
 * magic-link create` on that directory, consumed over the API (the server trusts no local process).
 */
export async function busOwner(meshUrl: string): Promise<ClickClackClient> {
  const { swarmServer } = await gqlData<{ swarmServer: { url: string; binary: string; dataDir: string } }>(meshUrl, '{ swarmServer { url binary dataDir } }');
  const link = await run(swarmServer.binary, ['admin', 'magic-link', 'create', '-data', swarmServer.dataDir, '-email', MANAGED_OWNER.email]);
  const base = new ClickClackClient({ url: swarmServer.url });
  return base.withToken(await base.consumeMagicLink(/mgt_[A-Za-z0-9_-]+/.exec(link.stdout)![0]));
}

/** Every bot token a workspace listing shows, with its revocation (read tolerantly: its exact shape is not recorded). */
export function tokensIn(listing: unknown): { id: string; revokedAt: string | null }[] {
  const out: { id: string; revokedAt: string | null }[] = [];
  const walk = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      if (typeof o.id === 'string' && o.id.startsWith('btok_')) out.push({ id: o.id, revokedAt: (o.revoked_at as string | null) ?? null });
      Object.values(o).forEach(walk);
    }
  };
  walk(listing);
  return out;
}

interface InvariantEvent {
  __typename: string;
  messageId?: string;
  woke?: string[];
  agentId?: string;
  messageIds?: string[];
  status?: string;
}

const EVENT_FIELDS = `__typename
  ... on MessageIngested { messageId woke }
  ... on TurnStarted { agentId messageIds }
  ... on TurnEnded { agentId status }
  ... on SwarmEnded { status }`;

/**
 * What must hold of a swarm after any crash (issue 10): it ended with a status; every message is in
 * the channel exactly once (no id twice, no agent's words twice); it was ingested once; every agent
 * a message addressed woke for it in exactly one turn; no token is left unrevoked.
 */
export async function expectSwarmInvariants(url: string, swarmId: string): Promise<{ swarm: SwarmView; messages: number; turns: number }> {
  const swarm = await getSwarm(url, swarmId);
  if (swarm.status === 'RUNNING') throw new Error(`swarm ${swarmId} is still RUNNING`);
  const owner = await busOwner(url);
  const roots = (await owner.listMessages(swarm.channel.channelId, { afterSeq: 0, limit: 200 })).messages;
  const all = [...roots];
  for (const r of roots) if (r.replyCount > 0) all.push(...(await owner.getThread(r.id, { limit: 200 })).replies);
  const ids = all.map((m) => m.id);
  if (new Set(ids).size !== ids.length) throw new Error(`a message id appears twice in the channel: ${ids.join(', ')}`);
  const agentWords = all.filter((m) => m.author?.kind === 'bot').map((m) => `${m.authorId}\u0000${m.threadRootId === m.id ? '' : m.threadRootId}\u0000${m.body}`);
  const dupWords = agentWords.filter((w, i) => agentWords.indexOf(w) !== i);
  if (dupWords.length) throw new Error(`an agent's message is in the channel twice: ${JSON.stringify(dupWords.map((w) => w.split('\u0000')[2]))}`);

  const events = await readAllEvents(url, swarmId);
  const ingested = events.filter((e) => e.__typename === 'MessageIngested');
  const ingestedIds = ingested.map((e) => e.messageId!);
  if (new Set(ingestedIds).size !== ingestedIds.length) throw new Error('a message was ingested twice');
  // The closing line is posted once the swarm has stopped listening: the only message it never ingests.
  const closing = roots.filter((m) => m.author?.kind !== 'bot' && m.body.startsWith(`The swarm ended ${swarm.status}`)).map((m) => m.id);
  if (closing.length !== 1) throw new Error(`expected one closing line, found ${closing.length}`);
  const missing = ids.filter((id) => !ingestedIds.includes(id) && !closing.includes(id));
  if (missing.length) throw new Error(`messages in the channel the swarm never ingested: ${missing.join(', ')}`);
  const started = events.filter((e) => e.__typename === 'TurnStarted');
  const failedTurns = events.filter((e) => e.__typename === 'TurnEnded' && e.status !== 'ok').length;
  for (const m of ingested) {
    for (const agent of m.woke ?? []) {
      const batches = started.filter((t) => t.agentId === agent && t.messageIds!.includes(m.messageId!)).length;
      // A failed turn hands its batch back (it runs again); otherwise an agent wakes once per message.
      const ok = failedTurns === 0 ? batches === 1 : batches >= 1;
      if (!ok && swarm.status !== 'STOPPED') throw new Error(`agent ${agent} woke ${batches} time(s) for message ${m.messageId}`);
    }
  }
  const tokens = tokensIn(await owner.listBotsRaw(swarm.channel.workspaceId));
  const live = tokens.filter((t) => !t.revokedAt);
  if (live.length) throw new Error(`tokens left unrevoked: ${live.map((t) => t.id).join(', ')}`);
  return { swarm, messages: all.length, turns: started.length };
}

/** Every event of one swarm through swarmEvents (up to SwarmEnded), in order. */
async function readAllEvents(url: string, swarmId: string): Promise<InvariantEvent[]> {
  const wsUrl = url.replace(/^http/, 'ws');
  const sub = subscribe<{ swarmEvents: InvariantEvent }>(wsUrl, `subscription ($id: ID) { swarmEvents(swarmId: $id) { ${EVENT_FIELDS} } }`, { id: swarmId });
  const out: InvariantEvent[] = [];
  try {
    for (;;) {
      const r = await sub.next(30_000);
      if (!r.data) throw new Error(`swarmEvents failed: ${JSON.stringify(r.errors)}`);
      out.push(r.data.swarmEvents);
      if (r.data.swarmEvents.__typename === 'SwarmEnded') return out;
    }
  } finally {
    await sub.close();
  }
}
