import { openDomainState, type DomainState } from '@keelson/platform';
import type { Logger, PgTimeouts } from '@keelson/service';
import { Authenticator } from './authenticator';
import { DeviceCredentials1764460800710 } from './deviceCredentials.migration';
import { IdentityTables1764460800700 } from './identityTables.migration';
import { JwtVerifier, type JwtSettings } from './jwtVerifier';
import { TokenStore } from './tokenStore';

export const identityMigrations = [IdentityTables1764460800700, DeviceCredentials1764460800710];

export interface IdentityOptions {
  databaseUrl: string;
  /** Accept JWTs of this identity provider beside API tokens. */
  jwt?: JwtSettings;
  pg?: PgTimeouts;
  log: Logger;
}

export interface Identity {
  tokens: TokenStore;
  authenticator: Authenticator;
  state: DomainState;
  close(): Promise<void>;
}

/**
 * The identity domain over its own connection pool: the token table migrated (under the shared
 * advisory lock, so the gateway and the identity subgraph may both open it), the token store and
 * the authenticator.
 */
export async function openIdentity(opts: IdentityOptions): Promise<Identity> {
  const state = await openDomainState({
    url: opts.databaseUrl,
    entities: [],
    migrations: identityMigrations,
    migrationsTableName: 'identity_migrations',
    log: opts.log,
    listenerName: 'keelson-identity-listener',
    ...(opts.pg ? { pg: opts.pg } : {}),
  });
  const tokens = new TokenStore(state.dataSource, state.events);
  const authenticator = new Authenticator(tokens, opts.jwt ? new JwtVerifier(opts.jwt) : undefined, state.dataSource, state.events, opts.log);
  return {
    tokens,
    authenticator,
    state,
    async close() {
      await authenticator.close();
      await state.close();
    },
  };
}

/** The JWT settings from the environment, or undefined when no identity provider is configured. */
export function jwtSettingsFromEnv(env: {
  KEELSON_JWT_JWKS_URL?: string;
  KEELSON_JWT_ISSUER?: string;
  KEELSON_JWT_AUDIENCE?: string;
  KEELSON_JWT_SCOPE_CLAIM: string;
  KEELSON_JWT_MAX_LIFETIME_S?: number;
}): JwtSettings | undefined {
  if (!env.KEELSON_JWT_JWKS_URL) return undefined;
  if (!env.KEELSON_JWT_ISSUER || !env.KEELSON_JWT_AUDIENCE) {
    throw new Error('KEELSON_JWT_JWKS_URL needs KEELSON_JWT_ISSUER and KEELSON_JWT_AUDIENCE: a JWT is accepted only for this issuer and audience');
  }
  return { jwksUrl: env.KEELSON_JWT_JWKS_URL, issuer: env.KEELSON_JWT_ISSUER, audience: env.KEELSON_JWT_AUDIENCE, scopeClaim: env.KEELSON_JWT_SCOPE_CLAIM, ...(env.KEELSON_JWT_MAX_LIFETIME_S ? { maxLifetimeSeconds: env.KEELSON_JWT_MAX_LIFETIME_S } : {}) };
}
