import { scopes as allScopes, scopeSchema, type Scope } from '@keelson/schema';
import { silentLogger, type PgTimeouts } from '@keelson/service';
import { openIdentity } from '../openIdentity';

const USAGE = `usage:
  npm run token -- create <name> --scopes read,write[,operate,admin] [--expires-days N]
  npm run token -- list
  npm run token -- revoke <token id>
Scopes: ${allScopes.join(', ')} (admin implies all; write and operate imply read). The secret of a new
token is printed once, on stdout; only its SHA-256 is stored.`;

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

/**
 * `npm run token`: make, list and revoke API tokens straight in Postgres (an operator with the
 * database is the mesh's administrator). Returns the exit code: 0 done, 2 bad usage, 1 failed.
 */
export async function runTokenCli(argv: readonly string[], config: { databaseUrl: string; pg: PgTimeouts }, io: TokenCliIo): Promise<number> {
  const args = [...argv];
  const command = args.shift();
  if (!command || !['create', 'list', 'revoke'].includes(command)) {
    io.err(USAGE);
    return 2;
  }
  let createInput: { name: string; scopes: Scope[]; expiresInDays?: number } | undefined;
  if (command === 'create') {
    const scopesArg = flag(args, '--scopes');
    const daysArg = flag(args, '--expires-days');
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
    ];
    if (problems.length) {
      io.err(`token create: ${problems.join('; ')}\n${USAGE}`);
      return 2;
    }
    createInput = { name, scopes: parsedScopes.map((p) => p.data as Scope), ...(days !== undefined ? { expiresInDays: days } : {}) };
  }
  if (command === 'revoke' && args.length !== 1) {
    io.err(`token revoke: name one token id\n${USAGE}`);
    return 2;
  }
  const identity = await openIdentity({ databaseUrl: config.databaseUrl, pg: config.pg, log: silentLogger() });
  try {
    const actor = { subject: 'cli:npm run token', kind: 'service' as const };
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
        io.out([t.id, t.name, t.scopes.join(','), state, `created ${t.createdAt.toISOString()}`, `last used ${t.lastUsedAt?.toISOString() ?? 'never'}`].join('\t'));
      }
      return 0;
    }
    const id = args[0]!;
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) {
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
