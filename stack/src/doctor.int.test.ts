import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { STANDIN_BIN } from '../../ribs/swarm/test/support/binary';
import { doctor, swarmBusCheck } from './doctor';

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

  it('names the managed binary and its version, and where its data lives, without starting it', async () => {
    const line = await swarmBusCheck({ ...process.env, CLICKCLACK_BIN: STANDIN_BIN, CLICKCLACK_PORT: '1' }, home);
    expect(line).toEqual({ status: 'ok', detail: `managed ClickClack 0.7.0 (keelson stand-in) (${STANDIN_BIN}) on 127.0.0.1:1, started by the first swarm; data in ${join(home, 'rib-swarm', 'clickclack', 'data')}` });
  });

  it('warns about an external server that does not answer', async () => {
    expect(await swarmBusCheck({ CLICKCLACK_URL: 'http://127.0.0.1:1' }, home)).toEqual({ status: 'warn', detail: 'external ClickClack at http://127.0.0.1:1 does not answer /readyz: swarms will not start' });
  });
});
