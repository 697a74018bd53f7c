import { auditDir, exportAuditDay } from '@keelson/platform';
import { silentLogger, type PgTimeouts } from '@keelson/service';
import { openIdentity } from '../openIdentity';
import type { TokenCliIo } from './tokenCli';

const USAGE = `usage:
  npm run audit -- export [--date YYYY-MM-DD]
Rewrites <KEELSON_WORKSPACE>/.data/audit/<date>.jsonl (default: today, UTC) from the audit log: one
JSON line per mutation and tool call of that day, in order. The identity service keeps the files up to
date as entries arrive; this rebuilds one (say, after restoring the database).`;

/** `npm run audit`: exports a day of the audit log as the seed's dated JSONL. Exit code 0, 2 bad usage, 1 failed. */
export async function runAuditCli(argv: readonly string[], config: { databaseUrl: string; pg: PgTimeouts; workspace: string }, io: TokenCliIo, today = new Date()): Promise<number> {
  const args = [...argv];
  if (args.shift() !== 'export') {
    io.err(USAGE);
    return 2;
  }
  const at = args.indexOf('--date');
  const day = at === -1 ? today.toISOString().slice(0, 10) : args[at + 1];
  if (at !== -1) args.splice(at, 2);
  if (!day || !/^\d{4}-\d{2}-\d{2}$/.test(day) || Number.isNaN(Date.parse(`${day}T00:00:00Z`)) || args.length) {
    io.err(`audit export: ${args.length ? `unexpected ${args.join(' ')}` : '--date: a day as YYYY-MM-DD'}\n${USAGE}`);
    return 2;
  }
  const identity = await openIdentity({ databaseUrl: config.databaseUrl, pg: config.pg, log: silentLogger() });
  try {
    const { file, records } = await exportAuditDay(identity.state.events, auditDir(config.workspace), day);
    io.err(`wrote ${records} audit record(s) of ${day}:`);
    io.out(file);
    return 0;
  } catch (err) {
    io.err(`audit export: ${(err as Error).message}`);
    return 1;
  } finally {
    await identity.close();
  }
}
