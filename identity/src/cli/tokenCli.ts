import { isUuid, scopes as allScopes, scopeSchema, type Scope } from '@keelson/schema';
import { silentLogger, type PgTimeouts } from '@keelson/service';
import { join, resolve } from 'node:path';
import { certificateDigest, DEVICE_NAME_PATTERN, ensureDeviceCa, issueDeviceCertificate, writeDeviceFiles } from '../deviceCa';
import { openIdentity } from '../openIdentity';

/** A device certificate's life unless --expires-days says otherwise. */
const DEFAULT_DEVICE_DAYS = 365;

const USAGE = `usage:
  npm run token -- create <name> --scopes read,write[,operate,admin] [--expires-days N]
  npm run token -- enroll-device <name> --scopes read,write[,operate,admin] [--expires-days N] [--out DIR]
  npm run token -- list
  npm run token -- revoke <token or device id>
Scopes: ${allScopes.join(', ')} (admin implies all; write and operate imply read). The secret of a new
token is printed once, on stdout; only its SHA-256 is stored. enroll-device issues a client
certificate from the mesh CA in KEELSON_HOME/device-ca (made on first use) and writes <name>.crt and
<name>.key (mode 0600) to DIR (default KEELSON_HOME/devices); the gateway trusts the CA with
KEELSON_TLS_CLIENT_CA (README "Put it on a network").`;

export interface TokenCliIo {
  /** One line of the answer (stdout). */
  out(line: string): void;
  /** One line of explanation (stderr). */
  err(line: string): void;
}

function flag(args: string[], name: string): string | undefined {
  const at = args.indexOf(name);
  if (at === -1) return undefined;
  const value = args[at + 1];
  args.splice(at, 2);
  return value;
}

/** What `create` and `enroll-device` make: a named credential with scopes and, optionally, a life in days. */
type CreateInput = { name: string; scopes: Scope[]; expiresInDays?: number };

/**
 * The arguments of `create` or `enroll-device` (the flags taken out of `args`): the credential to
 * make and, for a device, where its files go; or the usage error to print.
 */
function parseCreateArgs(command: 'create' | 'enroll-device', args: string[]): { input: CreateInput; outDir: string | undefined } | string {
  const scopesArg = flag(args, '--scopes');
  const daysArg = flag(args, '--expires-days');
  const outDir = command === 'enroll-device' ? flag(args, '--out') : undefined;
  const name = args.join(' ').trim();
  const parsedScopes = (scopesArg ?? '').split(',').map((s) => s.trim()).filter(Boolean).map((s) => scopeSchema.safeParse(s));
  const bad = parsedScopes.find((p) => !p.success);
  const days = daysArg === undefined ? undefined : Number(daysArg);
  const problems = [
    ...(name ? [] : ['a name is required']),
    ...(name.length > 100 ? ['the name is longer than 100 characters'] : []),
    ...(parsedScopes.length === 0 ? ['--scopes is required (e.g. --scopes read)'] : []),
    ...(bad ? [`--scopes: expected ${allScopes.join(', ')}`] : []),
    ...(days !== undefined && !(Number.isInteger(days) && days >= 1 && days <= 3650) ? ['--expires-days: a whole number from 1 to 3650'] : []),
    ...(command === 'enroll-device' && name && !DEVICE_NAME_PATTERN.test(name) ? ['a device name is letters, digits, ".", "_" and "-" (at most 64), starting with a letter or digit'] : []),
  ];
  if (problems.length) return `token ${command}: ${problems.join('; ')}\n${USAGE}`;
  return { input: { name, scopes: parsedScopes.map((p) => p.data as Scope), ...(days !== undefined ? { expiresInDays: days } : {}) }, outDir };
}

/**
 * `npm run token`: make, list and revoke API tokens straight in Postgres (an operator with the
 * database is the mesh's administrator). Returns the exit code: 0 done, 2 bad usage, 1 failed.
 */
export async function runTokenCli(argv: readonly string[], config: { databaseUrl: string; pg: PgTimeouts; home: string }, io: TokenCliIo): Promise<number> {
  const args = [...argv];
  const command = args.shift();
  if (!command || !['create', 'enroll-device', 'list', 'revoke'].includes(command)) {
    io.err(USAGE);
    return 2;
  }
  let createInput: CreateInput | undefined;
  let outDir: string | undefined;
  if (command === 'create' || command === 'enroll-device') {
    const parsed = parseCreateArgs(command, args);
    if (typeof parsed === 'string') {
      io.err(parsed);
      return 2;
    }
    ({ input: createInput, outDir } = parsed);
  }
  if (command === 'revoke' && args.length !== 1) {
    io.err(`token revoke: name one token or device id\n${USAGE}`);
    return 2;
  }
  const identity = await openIdentity({ databaseUrl: config.databaseUrl, pg: config.pg, log: silentLogger() });
  try {
    const actor = { subject: 'cli:npm run token', kind: 'service' as const };
    if (createInput && command === 'enroll-device') {
      const ca = await ensureDeviceCa(config.home);
      if (ca.created) io.err(`made the mesh CA for device certificates: ${ca.certPath}`);
      const issued = await issueDeviceCertificate(ca, createInput.name, createInput.expiresInDays ?? DEFAULT_DEVICE_DAYS);
      const record = await identity.tokens.enrollDevice({ name: createInput.name, scopes: createInput.scopes, certificateSha256: certificateDigest(issued.der), expiresAt: issued.notAfter }, actor);
      const files = writeDeviceFiles(resolve(outDir ?? join(config.home, 'devices')), createInput.name, issued);
      io.err(
        `enrolled device ${record.id} "${record.name}" (${record.scopes.join(', ')}), its certificate valid until ${issued.notAfter.toISOString()}; ` +
          `the gateway trusts it with KEELSON_TLS_CLIENT_CA=${ca.certPath}; revoke with npm run token -- revoke ${record.id}. Its certificate and key:`,
      );
      io.out(files.cert);
      io.out(files.key);
      return 0;
    }
    if (createInput) {
      const { token, record } = await identity.tokens.create(createInput, actor);
      io.err(`created token ${record.id} "${record.name}" (${record.scopes.join(', ')})${record.expiresAt ? `, expires ${record.expiresAt.toISOString()}` : ''}; its secret, shown once:`);
      io.out(token);
      return 0;
    }
    if (command === 'list') {
      const all = await identity.tokens.list();
      if (all.length === 0) io.err('no API tokens');
      for (const t of all) {
        const state = t.revokedAt ? `revoked ${t.revokedAt.toISOString()}` : t.expiresAt && t.expiresAt < new Date() ? 'expired' : 'live';
        io.out([t.id, t.name, t.credential, t.scopes.join(','), state, `created ${t.createdAt.toISOString()}`, `last used ${t.lastUsedAt?.toISOString() ?? 'never'}`].join('\t'));
      }
      return 0;
    }
    const id = args[0]!;
    if (!isUuid(id)) {
      io.err(`token revoke: "${id}" is not a token id (a UUID; npm run token -- list shows them)`);
      return 2;
    }
    const revoked = await identity.tokens.revoke(id, actor);
    io.out(`${revoked.id}\trevoked ${revoked.revokedAt!.toISOString()}`);
    return 0;
  } catch (err) {
    io.err(`token ${command}: ${(err as Error).message}`);
    return 1;
  } finally {
    await identity.close();
  }
}
