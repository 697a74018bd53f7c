import { join } from 'node:path';
import { ClickClackClient } from '@keelson/rib-swarm';
import { clickclackBinary, freePort } from '../../ribs/swarm/test/support/binary';
import { gqlData } from './client';

export { clickclackBinary, freePort };

/** The stand-in executable (used unless CLICKCLACK_BIN names a real ClickClack). */
export const STANDIN_BIN = join(__dirname, '..', '..', 'ribs', 'swarm', 'bin', 'clickclack');

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

/** A client of the managed ClickClack as its loopback owner (the test speaks to the bus as any client would). */
export async function busOwner(busUrl: string): Promise<ClickClackClient> {
  const base = new ClickClackClient({ url: busUrl });
  return base.withToken(await base.magicSession());
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
