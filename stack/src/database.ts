import { Client } from 'pg';

/**
 * Checks the Postgres at `url` and creates its database when only that is missing, so a fresh
 * machine's `npm start` works against the local server. Fails with a message saying what to do.
 */
export async function ensureDatabase(url: string): Promise<{ created: boolean }> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, '')) || 'postgres';
  const probe = new Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  try {
    await probe.connect();
    return { created: false };
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code !== '3D000') throw unreachable(url, err as Error);
  } finally {
    await probe.end().catch(() => undefined);
  }
  const adminUrl = new URL(url);
  adminUrl.pathname = '/postgres';
  const admin = new Client({ connectionString: adminUrl.toString(), connectionTimeoutMillis: 5000 });
  try {
    await admin.connect();
    await admin.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
    return { created: true };
  } catch (err) {
    if ((err as { code?: string }).code === '42P04') return { created: false };
    throw new Error(`Postgres is reachable but database "${name}" is missing and could not be created: ${(err as Error).message}`);
  } finally {
    await admin.end().catch(() => undefined);
  }
}

function redact(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

function unreachable(url: string, err: Error): Error {
  return new Error(
    `Postgres is not reachable at ${redact(url)} (${err.message}). Start it (e.g. \`pg_ctlcluster 15 main start\` or ` +
      '`docker compose up -d postgres`) or set DATABASE_URL to a server you can reach.',
  );
}
