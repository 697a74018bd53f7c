import { describeZodError } from '@keelson/schema';
import { agentSummarySchema, openChatSeedSchema, type AgentRef, type OpenChatSeed } from '@keelson/ribs-contract';
import type { ActiveRib } from '../activation/activeRib';
import { errorMessage } from '../errors';
import type { WarningSink } from '../warnings';

/** A rib's agents, each validated (a malformed one is dropped and warned about); a throwing lister yields none. */
export async function listRibAgents(active: ActiveRib, warn: WarningSink): Promise<AgentRef[]> {
  const { rib, ctx, id } = active;
  if (typeof rib.listAgents !== 'function') return [];
  let raw: unknown;
  try {
    raw = await rib.listAgents(ctx);
  } catch (err) {
    warn({ stage: 'runtime', rule: 'agents', ribId: id, message: `listAgents threw: ${errorMessage(err)}` });
    return [];
  }
  if (!Array.isArray(raw)) {
    warn({ stage: 'runtime', rule: 'agents', ribId: id, message: 'listAgents returned a non-array' });
    return [];
  }
  const out: AgentRef[] = [];
  for (const item of raw) {
    const parsed = agentSummarySchema.safeParse(item);
    if (parsed.success) out.push({ ...parsed.data, ribId: id });
    else warn({ stage: 'runtime', rule: 'agents', ribId: id, message: `dropped a malformed agent: ${describeZodError(parsed.error, 'agent')}` });
  }
  return out;
}

/** One agent's chat seed, or null for an unknown slug, a rib without agents, or a malformed seed. */
export async function resolveRibAgent(active: ActiveRib, slug: string, warn: WarningSink): Promise<OpenChatSeed | null> {
  const { rib, ctx, id } = active;
  if (typeof rib.resolveAgent !== 'function') return null;
  let raw: unknown;
  try {
    raw = await rib.resolveAgent(slug, ctx);
  } catch (err) {
    warn({ stage: 'runtime', rule: 'agents', ribId: id, message: `resolveAgent('${slug}') threw: ${errorMessage(err)}` });
    return null;
  }
  if (raw === null || raw === undefined) return null;
  const parsed = openChatSeedSchema.safeParse(raw);
  if (!parsed.success) {
    warn({ stage: 'runtime', rule: 'agents', ribId: id, message: `resolveAgent('${slug}') returned a malformed seed: ${describeZodError(parsed.error, 'seed')}` });
    return null;
  }
  return parsed.data;
}
