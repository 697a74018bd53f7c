import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Supergraph } from '@apollo/federation-internals';
import { envSchema, isLoopback, parseEnv, type MeshEnv } from '@keelson/schema';
import { meshSecurityFromEnv } from '@keelson/service';
import { supergraphForPlanning } from './auth/securityFeatures';
import type { GatewayOptions } from './startGateway';

/** The checked-in supergraph: `supergraph.graphql` beside `@keelson/schema`'s package.json. */
export function supergraphPath(): string {
  return join(dirname(require.resolve('@keelson/schema/package.json')), 'supergraph.graphql');
}

/** Subgraphs whose address the environment can set (`KEELSON_<NAME>_URL`, else `…_PORT`). */
const portVariables = {
  projects: 'KEELSON_PROJECTS_PORT',
  ribs: 'KEELSON_RIBS_PORT',
  runs: 'KEELSON_RUNS_PORT',
  sessions: 'KEELSON_SESSIONS_PORT',
  memory: 'KEELSON_MEMORY_PORT',
  identity: 'KEELSON_IDENTITY_PORT',
  swarms: 'KEELSON_SWARMS_PORT',
} as const satisfies Record<string, keyof MeshEnv>;

/**
 * The URL of each subgraph in `names` the environment locates: `KEELSON_<NAME>_URL` when set,
 * else `http://<host>:<KEELSON_<NAME>_PORT>/graphql` on the host the subgraphs bind (loopback when
 * they bind every interface). Subgraphs the environment does not know keep their supergraph URL.
 */
export function subgraphUrlsFromEnv(env: MeshEnv, names: readonly string[], raw: Record<string, string | undefined> = {}): Record<string, string> {
  const bound = env.KEELSON_HOST;
  const host = isLoopback(bound) || bound === '0.0.0.0' || bound === '::' ? '127.0.0.1' : bound.includes(':') ? `[${bound}]` : bound;
  const urls: Record<string, string> = {};
  for (const name of names) {
    if (!(name in portVariables)) continue;
    const key = `KEELSON_${name.toUpperCase()}_URL`;
    // Validated by parseEnv where @keelson/schema declares the variable; read as given until it does.
    const explicit = key in envSchema.shape ? (env as Record<string, unknown>)[key] as string | undefined : raw[key]?.trim();
    urls[name] = explicit || `http://${host}:${env[portVariables[name as keyof typeof portVariables]]}/graphql`;
  }
  return urls;
}

/**
 * The gateway's TLS from the environment: KEELSON_TLS_CERT and KEELSON_TLS_KEY (PEM files, both or
 * neither), read now so a wrong path stops the start naming the variable.
 */
export async function gatewayTlsFromEnv(env: MeshEnv): Promise<GatewayOptions['tls']> {
  const { KEELSON_TLS_CERT: certFile, KEELSON_TLS_KEY: keyFile } = env;
  if (!certFile && !keyFile) return undefined;
  if (!certFile || !keyFile) throw new Error(`TLS needs both KEELSON_TLS_CERT and KEELSON_TLS_KEY (${certFile ? 'KEELSON_TLS_KEY' : 'KEELSON_TLS_CERT'} is not set)`);
  const read = (name: string, file: string) =>
    readFile(file).catch((err: unknown) => {
      throw new Error(`${name}=${file} cannot be read: ${(err as Error).message}`);
    });
  return { cert: await read('KEELSON_TLS_CERT', certFile), key: await read('KEELSON_TLS_KEY', keyFile) };
}

/** Subscription router bounds from the environment. */
export function subscriptionLimitsFromEnv(env: MeshEnv): NonNullable<GatewayOptions['subscriptions']> {
  return {
    maxQueuedEvents: env.KEELSON_MAX_QUEUED_EVENTS,
    maxSubscriptionsPerSocket: env.KEELSON_MAX_SUBSCRIPTIONS_PER_SOCKET,
    maxConnectionsPerCredential: env.KEELSON_MAX_CONNECTIONS_PER_CREDENTIAL,
  };
}

/** How the gateway executes queries, as the environment says: the entity cache (KEELSON_GATEWAY_CACHE, on: LISTEN on DATABASE_URL), in-flight sharing (KEELSON_GATEWAY_COALESCE) and result shaping (KEELSON_GATEWAY_SHAPING). */
export function gatewayExecutionFromEnv(env: MeshEnv): Pick<GatewayOptions, 'cache' | 'coalesce' | 'shaping'> {
  const maxBytes = env.KEELSON_GATEWAY_CACHE_MAX_MB * 1024 * 1024;
  return {
    ...(env.KEELSON_GATEWAY_CACHE === 'on' ? { cache: { databaseUrl: env.DATABASE_URL, maxBytes, maxResponseBytes: maxBytes } } : {}),
    coalesce: env.KEELSON_GATEWAY_COALESCE === 'on',
    shaping: env.KEELSON_GATEWAY_SHAPING,
  };
}

/**
 * Everything `startGateway` needs but the logger and the credential check, from the environment
 * and the supergraph file (`KEELSON_SUPERGRAPH_FILE`, else the checked-in one).
 */
export async function loadGatewayConfig(
  rawEnv: Record<string, string | undefined>,
): Promise<Omit<GatewayOptions, 'log' | 'credentials'> & { env: MeshEnv; logLevel: MeshEnv['KEELSON_LOG_LEVEL']; supergraphFile: string }> {
  const env = parseEnv(rawEnv);
  const supergraphFile = env.KEELSON_SUPERGRAPH_FILE ?? supergraphPath();
  const supergraphSdl = await readFile(supergraphFile, 'utf8');
  const names = Supergraph.build(supergraphForPlanning(supergraphSdl)).subgraphsMetadata().map((s) => s.name);
  return {
    env,
    supergraphSdl,
    host: env.KEELSON_HOST,
    port: env.KEELSON_GATEWAY_PORT,
    security: meshSecurityFromEnv(env),
    subgraphUrls: subgraphUrlsFromEnv(env, names, rawEnv),
    subscriptions: subscriptionLimitsFromEnv(env),
    ...gatewayExecutionFromEnv(env),
    ...(await tlsOptions(env)),
    logLevel: env.KEELSON_LOG_LEVEL,
    supergraphFile,
  };
}

/** `tls`, `clientCa` and `tlsTerminatedBy` of GatewayOptions, as the environment sets them. */
export async function tlsOptions(env: MeshEnv): Promise<Pick<GatewayOptions, 'tls' | 'clientCa' | 'tlsTerminatedBy'>> {
  const tls = await gatewayTlsFromEnv(env);
  const caFile = env.KEELSON_TLS_CLIENT_CA;
  if (caFile && !tls) throw new Error('KEELSON_TLS_CLIENT_CA (device mode) needs KEELSON_TLS_CERT and KEELSON_TLS_KEY: device certificates are checked in the TLS handshake');
  const clientCa = caFile
    ? await readFile(caFile).catch((err: unknown) => {
        throw new Error(`KEELSON_TLS_CLIENT_CA=${caFile} cannot be read: ${(err as Error).message} (npm run token -- enroll-device makes the CA in KEELSON_HOME/device-ca)`);
      })
    : undefined;
  return { ...(tls ? { tls } : {}), ...(clientCa ? { clientCa } : {}), ...(env.KEELSON_TLS_TERMINATED_BY ? { tlsTerminatedBy: env.KEELSON_TLS_TERMINATED_BY } : {}) };
}
