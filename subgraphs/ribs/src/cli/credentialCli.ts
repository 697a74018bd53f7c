import { createDataSource, initializeAndMigrate } from '@keelson/platform';
import { credentialAccount, credentialServiceIdSchema } from '@keelson/host';
import { silentLogger } from '@keelson/service';
import { ribIdSchema } from '@keelson/ribs-contract';
import { StoredCredential } from '../credential/credential.entity';
import { loadCredentialKey } from '../credential/credentialKey';
import { PgCredentialStore } from '../credential/pgCredentialStore';
import { RibsTables1764460800200 } from '../migrations/1764460800200-RibsTables';
import type { RibsConfig } from '../config';

export const CREDENTIAL_USAGE = `usage:
  npm run credential -- set <ribId> <serviceId>      the secret is read from stdin (one line, or all of it when piped)
  npm run credential -- delete <ribId> <serviceId>
  npm run credential -- list [ribId]                  accounts only; secrets are never printed`;

export interface CliIo {
  /** The whole secret: stdin's content, without one trailing newline. */
  readSecret(): Promise<string>;
  out(line: string): void;
}

function parseTarget(ribId: string | undefined, serviceId: string | undefined): string {
  if (ribId === undefined || serviceId === undefined) throw new Error(`expected <ribId> <serviceId>\n${CREDENTIAL_USAGE}`);
  const rib = ribIdSchema.safeParse(ribId);
  if (!rib.success) throw new Error(`ribId: ${rib.error.issues[0]?.message} (got ${JSON.stringify(ribId ?? '')})`);
  const service = credentialServiceIdSchema.safeParse(serviceId);
  if (!service.success) throw new Error(`serviceId: ${service.error.issues[0]?.message} (got ${JSON.stringify(serviceId ?? '')})`);
  return credentialAccount(rib.data, service.data);
}

/**
 * The operator's way to set rib credentials (`npm run credential`): sealed with the same key the ribs
 * subgraph uses (KEELSON_CREDENTIALS_KEY, else `<KEELSON_HOME>/credentials.key`), straight into the
 * database. There is deliberately no GraphQL mutation for this. Resolves with the exit code.
 */
export async function runCredentialCli(argv: readonly string[], config: Pick<RibsConfig, 'databaseUrl' | 'settings'>, io: CliIo): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || !['set', 'delete', 'list'].includes(command)) {
    io.out(CREDENTIAL_USAGE);
    return 2;
  }
  const account = command === 'list' ? undefined : parseTarget(rest[0], rest[1]);
  const listRib = command === 'list' && rest[0] !== undefined ? ribIdSchema.parse(rest[0]) : undefined;
  const secret = command === 'set' ? await io.readSecret() : undefined;
  if (command === 'set' && !secret) throw new Error('no secret on stdin');

  const { dataSource } = createDataSource({
    url: config.databaseUrl,
    entities: [StoredCredential],
    migrations: [RibsTables1764460800200],
    migrationsTableName: 'ribs_migrations',
    log: silentLogger(),
    // Migrating holds one connection for the advisory lock while migrations run on another.
    poolSize: 2,
  });
  await initializeAndMigrate(dataSource);
  try {
    const store = new PgCredentialStore(dataSource, () => loadCredentialKey({ envKey: config.settings.credentialsKey, home: config.settings.home }));
    if (command === 'set') {
      await store.set(account!, secret!);
      io.out(`stored ${account} (encrypted at rest)`);
    } else if (command === 'delete') {
      io.out((await store.delete(account!)) ? `deleted ${account}` : `no credential ${account}`);
    } else {
      const rows = await store.list(listRib);
      io.out(rows.length === 0 ? 'no credentials' : rows.map((r) => `${r.account}\tkey ${r.keyId}\tupdated ${r.updatedAt.toISOString()}`).join('\n'));
    }
    return 0;
  } finally {
    await dataSource.destroy();
  }
}
