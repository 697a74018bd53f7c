// npm run audit -- export [--date YYYY-MM-DD]
import 'reflect-metadata';
import { homedir } from 'node:os';
import { keelsonHome, parseEnv } from '@keelson/schema';
import { meshSecurityFromEnv } from '@keelson/service';
import { runAuditCli } from './auditCli';

const env = parseEnv(process.env);
runAuditCli(process.argv.slice(2), { databaseUrl: env.DATABASE_URL, pg: meshSecurityFromEnv(env).pg, home: keelsonHome(env, homedir()) }, {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
}).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`audit: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
