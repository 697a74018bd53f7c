import { createAgentTurns, type AgentTurns, type Queryable } from '@keelson/providers';
import type { Logger } from '@keelson/service';
import { lazyWorkerRibHost, type LazyWorkerRibHost, type WorkerRibHostOptions } from '../../ribHostForWorker';
import type { PromptNodeExecutor } from '../runs/runActivities';
import { createPromptNodeExecutor } from './promptNodeExecutor';

export interface PromptExecutorOptions {
  /** Providers (KEELSON_ANTHROPIC_* / KEELSON_OPENAI_* …), KEELSON_RIBS and the grants. */
  env: Record<string, string | undefined>;
  /** The keelson home: the config file, rib data dirs, the neutral cwd. */
  home: string;
  /**
   * Ports the worker's rib host shares with an in-process ribs subgraph, the approval channel of its
   * policies' asks, and test overrides.
   */
  ribHost?: Pick<WorkerRibHostOptions, 'projects' | 'credentials' | 'snapshotStore' | 'approvals' | 'audit' | 'memory' | 'overrides'>;
}

export interface OpenedPromptExecutor {
  executor: PromptNodeExecutor;
  turns: AgentTurns;
  /** The worker's rib host, activated by the first prompt node. */
  ribHost: LazyWorkerRibHost;
  /** Disposes the rib host. */
  close(): Promise<void>;
}

/**
 * Prompt nodes on a worker: the provider registry of `env` and the config file, the usage ledger and
 * sessions in `db`, and rib tools through the worker's own rib host (whose contexts get
 * `runAgentTurn` / `getProviders` too).
 */
export function openPromptExecutor(opts: PromptExecutorOptions & { db: Queryable; log: Logger }): OpenedPromptExecutor {
  // The host's seams are the engine's, and the engine's tools the host's: each reaches the other lazily.
  const ribHost = lazyWorkerRibHost({ env: opts.env, home: opts.home, log: opts.log, ...opts.ribHost, seams: (ribId) => turns.seams(ribId) });
  const turns: AgentTurns = createAgentTurns({ home: opts.home, env: opts.env, db: opts.db, host: () => ribHost.current(), log: opts.log.child({ component: 'agent-turns' }) });
  return {
    executor: createPromptNodeExecutor(turns.deps, { ready: () => ribHost.get() }),
    turns,
    ribHost,
    close: () => ribHost.dispose(),
  };
}
