import { Client } from 'pg';
import { adminUrl } from './db';

/**
 * `KEELSON_TEST_PGVECTOR` says what a test run expects of pgvector on the test Postgres:
 * - `required` (what .ci/run sets, having installed it): hybrid-search specs run against it, and its
 *   absence fails them, naming the fix;
 * - `absent`: the machine has none, declared; those specs check the lexical fallback in their place,
 *   under names that say so (run and reported, never skipped, never passing as hybrid);
 * - unset: the run's global setup looks, and sets `present` or `absent`, warning when absent.
 */
export type PgvectorDeclaration = 'required' | 'present' | 'absent';

/** Whether the test server can create pgvector's extension (`pg_available_extensions`). */
export async function testServerHasPgvector(): Promise<boolean> {
  const c = new Client({ connectionString: adminUrl });
  await c.connect();
  try {
    const { rows } = await c.query("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'");
    return rows.length > 0;
  } finally {
    await c.end();
  }
}

/** For the global setup: settles KEELSON_TEST_PGVECTOR before any test file loads (workers inherit it). */
export async function declarePgvector(): Promise<void> {
  const declared = process.env.KEELSON_TEST_PGVECTOR;
  if (declared === 'required' || declared === 'absent' || declared === 'present') return;
  if (declared) throw new Error(`KEELSON_TEST_PGVECTOR=${declared}: expected required, absent or present`);
  const has = await testServerHasPgvector();
  process.env.KEELSON_TEST_PGVECTOR = has ? 'present' : 'absent';
  if (!has) {
    process.stderr.write(
      '\n!! pgvector is not installed on the test Postgres: hybrid memory search specs check the lexical fallback instead.\n' +
        '!! Install it with `scripts/install-pgvector.sh` (as .ci/run does) to test hybrid search.\n\n',
    );
  }
}
