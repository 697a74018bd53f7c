import type { BusAccess } from '../engine/busAccess';
import type { SwarmStore } from '../store/swarmStore';
import { MeshError, type SwarmBusMode } from '@keelson/schema';

/** The bus as `swarmServer` reports it. */
export interface ServerView {
  mode: SwarmBusMode;
  url: string | null;
  running: boolean;
  reason: string | null;
  version: string | null;
  liveSwarms: number;
  pid: number | null;
  adopted: boolean | null;
  binary: string | null;
  dataDir: string | null;
}

/**
 * The swarms' bus lifecycle (seed 001 "The rib may run ClickClack"): report it without starting
 * anything; start, stop and reset only a server this mesh runs itself — a URL or a token means
 * somebody else runs it, and all three refuse (FORBIDDEN). Stop and reset also refuse while a swarm
 * runs (CONFLICT), and reset needs `confirm: true`.
 */
export class ServerService {
  constructor(
    private readonly bus: BusAccess,
    private readonly store: SwarmStore,
  ) {}

  async status(): Promise<ServerView> {
    const liveSwarms = await this.store.countRunning();
    const setup = this.bus.setup;
    if (setup.mode === 'UNAVAILABLE') {
      return { mode: 'UNAVAILABLE', url: null, running: false, reason: setup.reason, version: null, liveSwarms, pid: null, adopted: null, binary: null, dataDir: null };
    }
    if (setup.mode === 'EXTERNAL') {
      let running = false;
      try {
        await this.bus.ensure();
        running = true;
      } catch {
        running = false;
      }
      return {
        mode: 'EXTERNAL',
        url: setup.url,
        running,
        reason: running ? null : `ClickClack at ${setup.url} does not answer /readyz`,
        version: null,
        liveSwarms,
        pid: null,
        adopted: null,
        binary: null,
        dataDir: null,
      };
    }
    const managed = this.bus.managed!;
    const s = await managed.status();
    return {
      mode: 'MANAGED',
      url: s.url,
      running: s.running && s.ready,
      reason: s.running ? (s.ready ? null : 'the server runs but does not answer /readyz') : 'not started yet: the first swarm (or startSwarmServer) starts it',
      version: (await managed.version()) ?? null,
      liveSwarms,
      pid: s.pid ?? null,
      adopted: s.running ? s.adopted : null,
      binary: s.binary,
      dataDir: s.dataDir,
    };
  }

  private owned(verb: string) {
    const setup = this.bus.setup;
    if (setup.mode === 'EXTERNAL') {
      throw new MeshError('FORBIDDEN', `${verb} refused: ClickClack at ${setup.url} is run by somebody else (CLICKCLACK_URL or CLICKCLACK_TOKEN is set); the mesh starts, stops and resets only a server it runs itself`);
    }
    if (setup.mode === 'UNAVAILABLE') throw new MeshError('SERVICE_UNAVAILABLE', `${verb}: ${setup.reason}`);
    return this.bus.managed!;
  }

  private async idle(verb: string) {
    const live = await this.store.countRunning();
    if (live > 0) throw new MeshError('CONFLICT', `${verb} refused: ${live} swarm(s) are running on it (stop them first)`);
  }

  async start(): Promise<ServerView> {
    await this.owned('startSwarmServer').ensure();
    return this.status();
  }

  async stop(): Promise<ServerView> {
    const managed = this.owned('stopSwarmServer');
    await this.idle('stopSwarmServer');
    await managed.stop();
    return this.status();
  }

  async reset(confirm: boolean): Promise<ServerView> {
    const managed = this.owned('resetSwarmServer');
    if (confirm !== true) {
      throw new MeshError('BAD_USER_INPUT', `confirm: resetting deletes ClickClack's data directory (${managed.dataDir}): every identity, channel and message. Pass confirm: true to do it`);
    }
    await this.idle('resetSwarmServer');
    await managed.reset();
    this.bus.invalidateOwner();
    return this.status();
  }
}
