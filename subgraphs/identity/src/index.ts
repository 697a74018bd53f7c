import { AuditLog } from '@keelson/platform';
import { AuditJsonlWriter, auditDir, ensureAdminToken, openIdentity, type Identity, type JwtSettings } from '@keelson/identity';
import { startSubgraph, type SubgraphStartOptions } from '@keelson/kit';
import type { IdentityContext } from './context';
import { buildIdentitySchema } from './schema';

export { buildIdentitySchema } from './schema';
export { loadIdentityConfig } from './config';
export type { IdentityConfig } from './config';

export interface StartIdentityOptions extends SubgraphStartOptions {
  jwt?: JwtSettings;
  /**
   * Make sure `<home>/token` holds a live admin token (written 0600 on first boot, or when the old one
   * was revoked): `npm start` and the compose `identity` service do. Ignored with authentication off.
   */
  adminTokenHome?: string;
  /**
   * Keep the audit trail's dated JSONL files under `<auditHome>/.data/audit/` while serving (from a
   * durable cursor): `npm start` and the compose `identity` service do, with the keelson home.
   */
  auditHome?: string;
}

export interface RunningIdentity {
  url: string;
  wsUrl: string;
  /** The identity domain, for in-process callers (the gateway of `npm start`, the bootstrap token). */
  identity: Identity;
  /** The local admin token, when `adminTokenHome` was given; `created` says whether this start made it. */
  adminToken: { token: string; path: string; created: boolean } | null;
  stop(): Promise<void>;
}

/** Boots the identity subgraph: migrate, then serve. */
export async function startIdentitySubgraph(opts: StartIdentityOptions): Promise<RunningIdentity> {
  const identity = await openIdentity({ databaseUrl: opts.databaseUrl, log: opts.log, pg: opts.security.pg, ...(opts.jwt ? { jwt: opts.jwt } : {}) });
  let jsonl: AuditJsonlWriter | undefined;
  try {
    const adminToken = opts.adminTokenHome && opts.security.auth === 'on' ? await ensureAdminToken(identity.tokens, opts.adminTokenHome) : null;
    // Where the token is, never what it is: logs are not a place for secrets.
    if (adminToken?.created) opts.log.info({ path: adminToken.path }, 'wrote an admin token (mode 0600)');
    jsonl = opts.auditHome
      ? new AuditJsonlWriter({ dataSource: identity.state.dataSource, events: identity.state.events, notifier: identity.state.notifier, log: opts.log }, auditDir(opts.auditHome))
      : undefined;
    await jsonl?.start();
    const writer = jsonl;
    const { schema } = await buildIdentitySchema();
    const served = await startSubgraph<IdentityContext>({
      name: 'identity',
      schema,
      host: opts.host,
      port: opts.port,
      security: opts.security,
      log: opts.log,
      context: (base) => ({ ...base, tokens: identity.tokens, events: identity.state.events }),
      audit: new AuditLog(identity.state.dataSource, opts.log, 'identity'),
      onStop: async () => {
        await writer?.stop();
        await identity.close();
      },
    });
    return { url: served.url, wsUrl: served.wsUrl, identity, adminToken, stop: served.stop };
  } catch (err) {
    await jsonl?.stop();
    await identity.close();
    throw err;
  }
}
