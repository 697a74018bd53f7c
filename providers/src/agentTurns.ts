import { join } from 'node:path';
import { readConfigFile, type KeelsonConfig } from '@keelson/host';
import { parseEnv } from '@keelson/schema';
import type { Logger } from '@keelson/service';
import type { RibAgentTurn } from '@keelson/ribs-contract';
import type { Queryable } from './ledger/queryable';
import { PgUsageLedger, type UsageLedger } from './ledger/usageLedger';
import { createProviderRegistry } from './registry/createProviderRegistry';
import type { ProviderRegistry } from './registry/providerRegistry';
import { createAgentTurnSeams, type AgentTurnSeams } from './seams/agentTurnSeams';
import { PgSessionStore, type SessionStore } from './sessions/sessionStore';
import { runAgentTurn, type AgentTurnDeps, type AgentTurnRequest } from './turn/runAgentTurn';

/** The folder under the keelson home where turns without a cwd run (never the server's cwd). */
export const NEUTRAL_CWD_DIR = 'agent-cwd';

export interface AgentTurnsOptions {
  /** The keelson home: the config file, and the neutral cwd `<home>/agent-cwd`. */
  home: string;
  /** @default process.env */
  env?: Record<string, string | undefined>;
  /** The config file's content. @default read from `<home>/config.json` (or YAML) */
  config?: KeelsonConfig;
  /** Postgres for the usage ledger and sessions (the runs migrations create their tables). */
  db?: Queryable;
  /** Overrides `db` for the ledger (tests). */
  ledger?: UsageLedger;
  /** Overrides `db` for sessions (tests). */
  sessions?: SessionStore;
  /** The rib host tools run through; a getter when the host is built after the seams. */
  host?: AgentTurnDeps['host'];
  log?: Pick<Logger, 'warn' | 'error'>;
}

/** The agent-turn engine of one process: its registry, its deps, the rib seams and direct turns. */
export interface AgentTurns {
  registry: ProviderRegistry;
  deps: AgentTurnDeps;
  /** `runAgentTurn` + `getProviders` for a rib's context. */
  seams: (ribId: string) => AgentTurnSeams;
  /** A turn on the engine's own terms (the workflow prompt path). */
  run(req: AgentTurnRequest): RibAgentTurn;
}

/**
 * Wires the engine from the environment (KEELSON_ANTHROPIC_* / KEELSON_OPENAI_* / KEELSON_AGENT_*)
 * and the config file (`providers`, `modelClasses`, `defaultProvider`, `toolDenylist`), with the
 * ledger and sessions in Postgres when `db` is given.
 */
export function createAgentTurns(opts: AgentTurnsOptions): AgentTurns {
  const raw = opts.env ?? process.env;
  const env = parseEnv(raw);
  let config = opts.config;
  if (!config) {
    const read = readConfigFile(opts.home, raw);
    if (!read.ok) opts.log?.warn({ path: read.path }, `ignoring the config file: ${read.problem}`);
    config = read.ok ? read.config : {};
  }
  const sessions = opts.sessions ?? (opts.db ? new PgSessionStore(opts.db) : undefined);
  const registry = createProviderRegistry({
    env: raw,
    config,
    sessionResume: sessions !== undefined,
    warn: (message) => opts.log?.warn({}, message),
  });
  const ledger = opts.ledger ?? (opts.db ? new PgUsageLedger(opts.db) : undefined);
  const deps: AgentTurnDeps = {
    registry,
    ...(opts.host ? { host: opts.host } : {}),
    ...(ledger ? { ledger } : {}),
    ...(sessions ? { sessions } : {}),
    neutralCwd: join(opts.home, NEUTRAL_CWD_DIR),
    toolDenylist: config.toolDenylist ?? [],
    maxTokens: env.KEELSON_AGENT_MAX_TOKENS,
    maxRounds: env.KEELSON_AGENT_MAX_ROUNDS,
    defaultTimeoutMs: env.KEELSON_AGENT_TURN_TIMEOUT_MS,
    ...(opts.log ? { log: opts.log } : {}),
  };
  return { registry, deps, seams: createAgentTurnSeams(deps), run: (req) => runAgentTurn(deps, req) };
}
