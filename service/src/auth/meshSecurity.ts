import { homedir } from 'node:os';
import { keelsonHome, type MeshEnv } from '@keelson/schema';
import { defaultLimits, limitsFromEnv, type RequestLimits } from '../limits';
import { accessPolicyFromEnv, loopbackOnly, type AccessPolicy } from './accessPolicy';
import { AssertionKey, loadAssertionKey } from './assertionKey';
import { apiTokenCheck, type ApiTokenCheck } from './apiTokens';

/** Postgres session bounds of every mesh connection. */
export interface PgTimeouts {
  statementTimeoutMs: number;
  idleInTransactionTimeoutMs: number;
  connectTimeoutMs: number;
}

/** The documented defaults (`.env.example`). */
export const defaultPgTimeouts: PgTimeouts = { statementTimeoutMs: 30_000, idleInTransactionTimeoutMs: 60_000, connectTimeoutMs: 10_000 };

/** What every mesh service serves under: who is asked, the assertion key, allowlists and limits. */
export interface MeshSecurity {
  /** `off` only with a loopback bind; then requests without an assertion run as an anonymous admin. */
  auth: 'on' | 'off';
  /** Signs and verifies caller assertions (gateway → subgraph, service → service). */
  assertions: AssertionKey;
  access: AccessPolicy;
  limits: RequestLimits;
  pg: PgTimeouts;
  /** Verifies a scraper's bearer API token at a subgraph's `/metrics` (the gateway verifies with its own authenticator). */
  apiTokens?: ApiTokenCheck;
}

/** The mesh's security settings from the parsed environment (the assertion key file lives in KEELSON_HOME). */
export function meshSecurityFromEnv(env: MeshEnv): MeshSecurity {
  const userHome = homedir();
  const home = keelsonHome(env, userHome);
  const pg: PgTimeouts = {
    statementTimeoutMs: env.KEELSON_PG_STATEMENT_TIMEOUT_MS,
    idleInTransactionTimeoutMs: env.KEELSON_PG_IDLE_IN_TRANSACTION_TIMEOUT_MS,
    connectTimeoutMs: env.KEELSON_PG_CONNECT_TIMEOUT_MS,
  };
  return {
    auth: env.KEELSON_AUTH,
    assertions: loadAssertionKey(env.KEELSON_ASSERTION_SECRET, home),
    access: accessPolicyFromEnv(env),
    limits: limitsFromEnv(env),
    pg,
    apiTokens: apiTokenCheck(env.DATABASE_URL, pg),
  };
}

/** Security for a service in a test: authentication on, a random key, loopback names only, the default limits. */
export function testSecurity(overrides: Partial<MeshSecurity> = {}): MeshSecurity {
  return {
    auth: 'on',
    assertions: AssertionKey.random(),
    access: loopbackOnly,
    limits: defaultLimits,
    pg: defaultPgTimeouts,
    ...overrides,
  };
}
