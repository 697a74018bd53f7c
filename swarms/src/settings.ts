import type { BusSetup } from './bus/busSetup';
import type { TemporalTarget } from '@keelson/schema';

/** What the swarms domain needs from its environment (resolved once by config.ts). */
export interface SwarmsSettings {
  /** The Keelson home (a managed bus lives under `<home>/rib-swarm/clickclack`). */
  home: string;
  /** Which bus: MANAGED, EXTERNAL or UNAVAILABLE with its reason. */
  bus: BusSetup;
  /** What a managed server's child inherits (minus every `CLICKCLACK_*` variable). */
  env: Record<string, string | undefined>;
  /** Where swarms start. */
  temporal: TemporalTarget;
  /** The projects subgraph's GraphQL endpoint (a swarm's project). */
  projectsUrl: string;
  /** Heartbeat timeout of a swarm's tail and turn activities. */
  heartbeatTimeoutMs: number;
}
