import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NO_BINARY_REASON, resolveBusSetup } from '../src/bus/busSetup';
import { childEnv } from '../src/bus/managedBus';

describe('resolveBusSetup: which server the swarm uses', () => {
  let dir: string;
  let bin: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'keelson-bus-setup-'));
    bin = join(dir, 'clickclack');
    writeFileSync(bin, '#!/bin/sh\n');
    chmodSync(bin, 0o755);
    writeFileSync(join(dir, 'not-executable'), '');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is UNAVAILABLE with neither a binary nor a URL, and says how to fix it', () => {
    expect(resolveBusSetup({ PATH: '/nonexistent' }, '/home/k')).toEqual({ mode: 'UNAVAILABLE', reason: NO_BINARY_REASON });
  });

  it('manages a binary named by CLICKCLACK_BIN under <home>/rib-swarm/clickclack on port 18080 by default', () => {
    expect(resolveBusSetup({ CLICKCLACK_BIN: bin, PATH: '' }, '/home/k')).toEqual({
      mode: 'MANAGED',
      binary: bin,
      port: 18080,
      url: 'http://127.0.0.1:18080',
      dataRoot: '/home/k/rib-swarm/clickclack',
    });
  });

  it('finds clickclack on PATH when CLICKCLACK_BIN is unset, honouring CLICKCLACK_PORT', () => {
    expect(resolveBusSetup({ PATH: `/nonexistent:${dir}`, CLICKCLACK_PORT: '19001' }, '/h')).toMatchObject({ mode: 'MANAGED', binary: bin, port: 19001 });
  });

  it('says so when CLICKCLACK_BIN is not an executable file', () => {
    expect(resolveBusSetup({ CLICKCLACK_BIN: join(dir, 'not-executable') }, '/h')).toEqual({
      mode: 'UNAVAILABLE',
      reason: `CLICKCLACK_BIN=${join(dir, 'not-executable')} is not an executable file`,
    });
  });

  it('is EXTERNAL as soon as a URL or a token is set, even with a binary at hand', () => {
    expect(resolveBusSetup({ CLICKCLACK_URL: 'https://chat.example.com/', CLICKCLACK_TOKEN: 'sst_x', CLICKCLACK_BIN: bin }, '/h')).toEqual({
      mode: 'EXTERNAL',
      url: 'https://chat.example.com',
      token: 'sst_x',
    });
    expect(resolveBusSetup({ CLICKCLACK_TOKEN: 'sst_x' }, '/h')).toEqual({ mode: 'EXTERNAL', url: 'http://127.0.0.1:18080', token: 'sst_x' });
    expect(resolveBusSetup({ CLICKCLACK_URL: 'ftp://x' }, '/h')).toMatchObject({ mode: 'UNAVAILABLE' });
  });

  it('hands a spawned server none of the CLICKCLACK_* variables', () => {
    expect(childEnv({ PATH: '/bin', CLICKCLACK_DB: 'postgres://x', CLICKCLACK_DATA: '/elsewhere', KEELSON_HOME: '/h', EMPTY: undefined })).toEqual({ PATH: '/bin', KEELSON_HOME: '/h' });
  });
});
