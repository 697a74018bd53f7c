import { silentLogger, type PgTimeouts } from '@keelson/service';
import { auditDir, exportAudit } from '../audit/auditFiles';
import { openIdentity } from '../openIdentity';
import type { TokenCliIo } from './tokenCli';

const USAGE = `usage:
  npm run audit -- export [--date YYYY-MM-DD]
Writes the audit trail (one entry per mutation and tool call, from Postgres) to
KEELSON_HOME/.data/audit/<date>.jsonl: every day, or the one --date names (UTC). Each file is
rewritten whole from the table. The identity service keeps the same files up to date while it runs.`;

/** `npm run audit`: the dated JSONL files from the table. Returns the exit code: 0 done, 2 bad usage, 1 failed. */
export async function runAuditCli(argv: readonly string[], config: { databaseUrl: string; pg: PgTimeouts; home: string }, io: TokenCliIo): Promise<number> {
  const [command, ...rest] = argv;
  const date = rest[0] === '--date' ? rest[1] : undefined;
  const extra = rest[0] === '--date' ? rest.slice(2) : rest;
  if (command !== 'export' || extra.length > 0 || (rest[0] === '--date' && !date)) {
    io.err(USAGE);
    return 2;
  }
  if (date !== undefined && !/^\d{4}-\d{2}-\d{2}$/.test(date)) {
    io.err(`--date must be YYYY-MM-DD, got '${date}'`);
    return 2;
  }
  const identity = await openIdentity({ databaseUrl: config.databaseUrl, log: silentLogger(), pg: config.pg });
  try {
    const dir = auditDir(config.home);
    const { files, entries } = await exportAudit(identity.state.events, dir, date);
    for (const file of files) io.out(file);
    io.err(`${entries} entr${entries === 1 ? 'y' : 'ies'} in ${files.length} file${files.length === 1 ? '' : 's'} under ${dir}`);
    return 0;
  } finally {
    await identity.close();
  }
}
