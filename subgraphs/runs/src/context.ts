import type { EventLog } from '@keelson/platform';
import { byKeys, groupByKeys, type PageArgs, type SubgraphContext } from '@keelson/kit';
import { streams, type EventEnvelope, type OpFramePayload, type RunEventPayload, type RunStatus } from '@keelson/schema';
import type { Catalog, Op, Run, RunNode, RunPage, RunPause, RunsServices } from '@keelson/runs';

export interface RunsContext extends SubgraphContext {
  services: RunsServices;
}

/** A page request of one entity's events: `<id>\0<after>\0<first>`. */
export const runsPageKey = (id: string, args: PageArgs) => `${id}\u0000${args.after ?? 0}\u0000${args.first}`;

function parsePageKey(key: string): { id: string; after: number; first: number } {
  const [id, after, first] = key.split('\u0000');
  return { id: id!, after: Number(after), first: Number(first) };
}

/** Batches page requests by (after, first): one statement per distinct pair. */
async function pagedEvents<P>(events: EventLog, stream: string, keys: readonly string[]): Promise<EventEnvelope<P>[][]> {
  const parsed = keys.map(parsePageKey);
  const groups = new Map<string, number[]>();
  parsed.forEach((p, i) => groups.set(`${p.after}\u0000${p.first}`, [...(groups.get(`${p.after}\u0000${p.first}`) ?? []), i]));
  const out: EventEnvelope<P>[][] = new Array(keys.length);
  for (const indexes of groups.values()) {
    const { after, first } = parsed[indexes[0]!]!;
    const byKey = await events.readByKeys<P>(stream, indexes.map((i) => parsed[i]!.id), after, first + 1);
    for (const i of indexes) out[i] = byKey.get(parsed[i]!.id) ?? [];
  }
  return out;
}

/** Owner page requests (`Project.runs`, `Rib.runs`). */
export interface OwnerPage {
  owner: string;
  status: RunStatus | null;
  args: PageArgs;
}

/** DataLoader's cache key of an owner page; the owner (any text) last, after the fixed-format parts. */
const ownerPageKey = (p: OwnerPage) => `${p.status ?? ''}\u0000${p.args.first}\u0000${p.args.after ?? ''}\u0000${p.owner}`;

/** The per-request loaders of this subgraph; every field and reference resolver goes through them. */
export function runsLoaders(ctx: RunsContext) {
  return ctx.loaders.setOf(makeRunsLoaders, ctx);
}

function makeRunsLoaders(ctx: RunsContext) {
  const { loaders, services } = ctx;
  return {
    run: loaders.get<string, Run | null>('run', async (ids) => byKeys(ids, await services.runs.byIds(ids), (r) => r.id)),
    op: loaders.get<string, Op | null>('op', async (ids) => byKeys(ids, await services.ops.byIds(ids), (o) => o.id)),
    nodesOfRun: loaders.get<string, RunNode[]>('nodesOfRun', async (ids) => groupByKeys(ids, await services.runs.nodesOf(ids), (n) => n.runId)),
    openPausesOfRun: loaders.get<string, RunPause[]>('openPausesOfRun', async (ids) =>
      groupByKeys(ids, await services.runs.openPausesOf(ids), (p) => p.runId),
    ),
    /** Keys from `pageKey`; each value holds up to first + 1 events. */
    runEvents: loaders.get<string, EventEnvelope<RunEventPayload>[]>('runEvents', (keys) => pagedEvents(services.events, streams.runs, keys)),
    /** Keys from `pageKey`; each value holds up to first + 1 frames. */
    opFrames: loaders.get<string, EventEnvelope<OpFramePayload>[]>('opFrames', (keys) => pagedEvents(services.events, streams.ops, keys)),
    runsOfOwner: loaders.get<OwnerPage, RunPage, string>('runsOfOwner', (pages) => services.runs.pagesFor(pages), { cacheKeyFn: ownerPageKey }),
    /** Key: a project id, or '' for the global scope. */
    catalog: loaders.get<string, Catalog>('catalog', (keys) => Promise.all(keys.map((k) => services.catalog.forProject(k || null)))),
  };
}
