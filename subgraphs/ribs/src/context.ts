import type { ChatsServices } from '@keelson/chats';
import { type EventLog } from '@keelson/platform';
import type { RibHost, SnapshotRecord } from '@keelson/host';
import { type SubgraphContext } from '@keelson/kit';
import type { AgentRef, CommandRef, RibSummary } from '@keelson/ribs-contract';
import type { PgCredentialStore } from './credential/pgCredentialStore';
import type { ManifestNudges } from './manifest/manifestNudges';
import type { GraphqlProjectsPort } from './projects/graphqlProjectsPort';
import type { LiveKeys } from './runs/liveKeys';
import type { RibRuntime } from './runs/ribRuntime';
import type { PgSnapshotStore } from './snapshot/pgSnapshotStore';

export interface RibsServices {
  host: RibHost;
  snapshots: PgSnapshotStore;
  credentials: PgCredentialStore;
  projects: GraphqlProjectsPort;
  manifest: ManifestNudges;
  events: EventLog;
  /** The run seams' machinery, when the subgraph was started with `runs`. */
  runtime?: RibRuntime;
  /** Live `snapshotFrames` subscribers per key (the region heartbeat's input). */
  liveKeys?: LiveKeys;
  /** The chats domain (seed 000's chat surface), when the subgraph was started with `runs` (it needs Temporal). */
  chats?: ChatsServices;
}

export interface RibsContext extends SubgraphContext {
  services: RibsServices;
}

/** The loader key of one snapshot version. */
export function versionRef(key: string, version: number): string {
  return `${version}\u0000${key}`;
}

function parseVersionRef(ref: string): { key: string; version: number } {
  const at = ref.indexOf('\u0000');
  return { version: Number(ref.slice(0, at)), key: ref.slice(at + 1) };
}

/** The per-request loaders; every Rib field and snapshot read goes through them. */
export function ribsLoaders(ctx: RibsContext) {
  return ctx.loaders.setOf(makeRibsLoaders, ctx);
}

function makeRibsLoaders(ctx: RibsContext) {
  const { loaders, services } = ctx;
  return {
    /** A rib's manifest entry, re-validated and auth-probed once per request. */
    summary: loaders.get<string, RibSummary | null>('summary', (ids) => Promise.all(ids.map(async (id) => (await services.host.ribSummary(id)) ?? null))),
    agents: loaders.get<string, AgentRef[]>('agents', (ids) => Promise.all(ids.map((id) => services.host.agents(id)))),
    commands: loaders.get<string, CommandRef[]>('commands', (ids) => Promise.all(ids.map((id) => services.host.commands(id)))),
    latestSnapshot: loaders.get<string, SnapshotRecord | null>('latestSnapshot', async (keys) => {
      const rows = new Map((await services.snapshots.latestOf(keys)).map((r) => [r.key, r]));
      return keys.map((k) => rows.get(k) ?? null);
    }),
    /** A stored version by `versionRef(key, version)`; null once pruned. */
    snapshotVersion: loaders.get<string, SnapshotRecord | null>('snapshotVersion', async (refs) => {
      const wanted = refs.map(parseVersionRef);
      const rows = new Map((await services.snapshots.versions(wanted)).map((r) => [versionRef(r.key, r.version), r]));
      return refs.map((r) => rows.get(r) ?? null);
    }),
  };
}
