import { createAgentTurns, type AgentTurns } from '@keelson/providers';
import { graphqlMemoryTools, type RibHost } from '@keelson/host';
import { MeshError } from '@keelson/schema';
import type { Logger, ServiceIdentity } from '@keelson/service';
import type { MemoryTools, RibContext } from '@keelson/ribs-contract';

/** The seed 000 seams a rib reaches in whichever process hosts it. */
export type RibAgentSeams = Required<Pick<RibContext, 'runAgentTurn' | 'getProviders' | 'getMemory'>>;

export interface RibAgentSeamsOptions {
  /** What providers read (KEELSON_ANTHROPIC_* / KEELSON_OPENAI_* / KEELSON_AGENT_* / KEELSON_MODEL_*). */
  env: Record<string, string | undefined>;
  /** The keelson home: the config file and the neutral cwd. */
  home: string;
  /** The rib host whose tools a turn may call, once it exists. */
  host: () => RibHost | undefined;
  /** Postgres for the usage ledger and provider sessions, once the runs domain opened it (its migrations own the tables). */
  db?: () => { query(sql: string, params?: unknown[]): Promise<unknown> } | undefined;
  /** The memory subgraph's GraphQL endpoint (a getter when it starts after the ribs). */
  memoryUrl: string | (() => string | undefined);
  /** Who this process is to the memory subgraph. */
  identity: ServiceIdentity;
  log: Logger;
}

/**
 * `runAgentTurn`, `getProviders` (the process's own provider registry and agent-turn engine, as the
 * worker has for prompt nodes) and `getMemory` (over the memory subgraph) for each rib the process
 * hosts: the ribs process gets them as the worker's ribs do.
 */
export function ribAgentSeams(opts: RibAgentSeamsOptions): { turns: AgentTurns; seams: (ribId: string) => RibAgentSeams } {
  const db = opts.db;
  const turns = createAgentTurns({
    home: opts.home,
    env: opts.env,
    host: opts.host,
    ...(db
      ? {
          db: {
            query: (sql: string, params?: unknown[]) => {
              const q = db();
              if (!q) return Promise.reject(new MeshError('SERVICE_UNAVAILABLE', 'the runs domain is not open yet'));
              return q.query(sql, params);
            },
          },
        }
      : {}),
    log: opts.log.child({ component: 'rib-agent-turns' }),
  });
  return {
    turns,
    seams: (ribId) => {
      const own = turns.seams(ribId);
      const getMemory = (): MemoryTools => {
        const url = typeof opts.memoryUrl === 'function' ? opts.memoryUrl() : opts.memoryUrl;
        if (!url) throw new MeshError('SERVICE_UNAVAILABLE', 'the memory subgraph is not up yet');
        return graphqlMemoryTools(url, opts.identity, ribId);
      };
      return { runAgentTurn: own.runAgentTurn, getProviders: own.getProviders, getMemory };
    },
  };
}
