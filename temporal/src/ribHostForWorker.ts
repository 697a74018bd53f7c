import type { AuditSink } from '@keelson/platform';
import { createExec, createRibHost, type ApprovalPort, type CredentialStore, type ProjectsPort, type RibHost, type RibHostOptions, type SnapshotStore } from '@keelson/host';
import type { Logger } from '@keelson/service';
import type { RibExec } from '@keelson/ribs-contract';

export interface WorkerRibHostOptions {
  /** The environment ribs see: KEELSON_RIBS, the grant variables, and what their processes inherit. */
  env: Record<string, string | undefined>;
  /** The keelson home (rib data dirs, the config file). */
  home: string;
  log: Logger;
  /**
   * Ports an in-process embedder shares with the worker (startMesh passes the ribs subgraph's
   * projects and credentials). Absent: no project or credential seams, and snapshots the worker's
   * tools publish stay in this host's memory.
   */
  projects?: ProjectsPort;
  credentials?: CredentialStore;
  snapshotStore?: SnapshotStore;
  /** The run seams of the worker's rib contexts (runAgentTurn and getProviders, …). */
  seams?: RibHostOptions['seams'];
  /**
   * Where a policy `ask` about a tool this host runs goes to the operator: the stack passes
   * `runApprovalPort` over the runs domain, the approval gates of the ribs process. Absent, an ask
   * denies ("no approval channel").
   */
  approvals?: ApprovalPort;
  /** Where the tool calls this host runs are recorded (the worker's `AuditLog`). */
  audit?: AuditSink;
  /** MemoryTools per rib (over the memory subgraph): `memory_recall`/`memory_write` for prompt nodes, `getMemory` for ribs. */
  memory?: RibHostOptions['memory'];
  /** Tests: an explicit `available` map, a static config, … */
  overrides?: Omit<RibHostOptions, 'env' | 'home' | 'logger' | 'exec' | 'projects' | 'credentials' | 'snapshotStore' | 'seams' | 'approvals' | 'audit' | 'memory'>;
}

/** A `RibExec` whose processes inherit `env` under whatever a call adds. */
function execWithEnv(base: RibExec, env: Record<string, string | undefined>): RibExec {
  const overlay: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (typeof value === 'string') overlay[key] = value;
  return {
    runJSON: (cmd, args, opts) => base.runJSON(cmd, args, { ...opts, env: { ...overlay, ...opts?.env } }),
    runText: (cmd, args, opts) => base.runText(cmd, args, { ...opts, env: { ...overlay, ...opts?.env } }),
  };
}

/**
 * The worker's own rib host: the same ribs the ribs subgraph activates (discovery, `KEELSON_RIBS`,
 * the config file's grants), so activities can execute rib tools (a prompt node's `allowed_tools`)
 * with the registry's input parsing, policies and grants. The runs service's catalog reads rib
 * workflows from one too. Dispose it when the process stops.
 */
export async function createWorkerRibHost(opts: WorkerRibHostOptions): Promise<RibHost> {
  return createRibHost({
    ...opts.overrides,
    env: opts.env,
    home: opts.home,
    logger: opts.log.child({ component: 'worker-rib-host' }),
    exec: execWithEnv(createExec(), opts.env),
    ...(opts.projects ? { projects: opts.projects } : {}),
    ...(opts.credentials ? { credentials: opts.credentials } : {}),
    ...(opts.snapshotStore ? { snapshotStore: opts.snapshotStore } : {}),
    ...(opts.seams ? { seams: opts.seams } : {}),
    ...(opts.approvals ? { approvals: opts.approvals } : {}),
    ...(opts.audit ? { audit: opts.audit } : {}),
    ...(opts.memory ? { memory: opts.memory } : {}),
  });
}

/** A worker rib host activated on first use (a worker that never runs a rib tool never activates ribs). */
export interface LazyWorkerRibHost {
  /** The host, activating it on the first call; a failed activation is retried on the next call. */
  get(): Promise<RibHost>;
  /** The host when it is active, else undefined (never activates). */
  current(): RibHost | undefined;
  /** Disposes the host if it was activated. Idempotent. */
  dispose(): Promise<void>;
}

export function lazyWorkerRibHost(opts: WorkerRibHostOptions): LazyWorkerRibHost {
  let pending: Promise<RibHost> | undefined;
  let active: RibHost | undefined;
  let disposed = false;
  return {
    get() {
      if (disposed) return Promise.reject(new Error('the worker rib host was disposed'));
      pending ??= createWorkerRibHost(opts).then(
        (host) => (active = host),
        (err: unknown) => {
          pending = undefined;
          throw err;
        },
      );
      return pending;
    },
    current: () => active,
    async dispose() {
      disposed = true;
      const host = await pending?.catch(() => undefined);
      await host?.dispose();
    },
  };
}
