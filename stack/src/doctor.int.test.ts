import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { STANDIN_BIN } from '@keelson/clickclack-standin';
import { adminUrl } from '../../test/support/db';
import { doctor, swarmBusCheck } from './doctor';

const run = promisify(execFile);

describe('npm run doctor: the swarms line', () => {
  const home = mkdtempSync(join(tmpdir(), 'keelson-doctor-'));
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it('says swarms are unavailable, and why, with neither a binary nor a URL (a warning: the rest of the mesh runs)', async () => {
    const checks = await doctor({ PATH: '/usr/bin:/bin', KEELSON_HOME: home, DATABASE_URL: process.env.DATABASE_URL });
    expect(checks.find((c) => c.name === 'swarms')).toEqual({
      name: 'swarms',
      status: 'warn',
      detail: expect.stringMatching(/^swarms unavailable: no clickclack binary: set CLICKCLACK_BIN or put clickclack on PATH.*the rest of the mesh is unaffected/),
    });
  });

  it('names the Postgres server and its version', async () => {
    const { Client } = await import('pg');
    const client = new Client({ connectionString: adminUrl });
    await client.connect();
    const version = (await client.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version;
    await client.end();
    const checks = await doctor({ PATH: '/usr/bin:/bin', KEELSON_HOME: home, DATABASE_URL: adminUrl });
    expect(checks.find((c) => c.name === 'postgres')).toMatchObject({ status: 'ok', detail: expect.stringContaining(`server ${version}`) });
    expect(version).toMatch(/^\d+/);
  });

  it('reads .env from where it runs, under the real environment (npm run doctor)', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'keelson-doctor-cwd-'));
    try {
      writeFileSync(join(cwd, '.env'), 'DATABASE_URL=postgres://postgres@127.0.0.1:1/from_dotenv\n');
      const root = join(__dirname, '..', '..');
      const env: NodeJS.ProcessEnv = { ...process.env, KEELSON_HOME: home, PATH: '/usr/bin:/bin' };
      delete env.KEELSON_ENV_FILE;
      delete env.DATABASE_URL;
      const doctorRun = await run(process.execPath, ['-r', join(root, 'scripts', 'register.js'), join(root, 'stack', 'src', 'doctor.ts')], { cwd, env }).catch((err: { stdout: string }) => err);
      expect(doctorRun.stdout).toMatch(/FAIL\s+postgres\s+127\.0\.0\.1:1 unreachable/);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  }, 60_000);

  it('names the managed binary and its version, and where its data lives, without starting it', async () => {
    const line = await swarmBusCheck({ ...process.env, CLICKCLACK_BIN: STANDIN_BIN, CLICKCLACK_PORT: '1' }, home);
    expect(line).toEqual({ status: 'ok', detail: `managed ClickClack 0.7.0 (keelson stand-in) (${STANDIN_BIN}) on 127.0.0.1:1, started by the first swarm; data in ${join(home, 'rib-swarm', 'clickclack', 'data')}` });
  });

  it('warns about an external server that does not answer', async () => {
    expect(await swarmBusCheck({ CLICKCLACK_URL: 'http://127.0.0.1:1' }, home)).toEqual({ status: 'warn', detail: 'external ClickClack at http://127.0.0.1:1 does not answer /readyz: swarms will not start' });
  });
});
