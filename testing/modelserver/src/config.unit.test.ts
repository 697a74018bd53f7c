import { loadModelServerConfig } from './config';

describe('loadModelServerConfig', () => {
  it('defaults to loopback, a free port, no script and 256 dimensions', () => {
    expect(loadModelServerConfig([], {})).toEqual({ host: '127.0.0.1', port: 0, scriptPath: undefined, embeddingDimensions: 256, logLevel: 'info' });
  });

  it('reads the variables, and lets flags win over them', () => {
    const env = { KEELSON_HOST: '::1', KEELSON_MODEL_SERVER_PORT: '9000', KEELSON_MODEL_SCRIPT: '/env/script.json', KEELSON_LOG_LEVEL: 'debug' };
    expect(loadModelServerConfig([], env)).toMatchObject({ host: '::1', port: 9000, scriptPath: '/env/script.json', logLevel: 'debug' });
    expect(loadModelServerConfig(['--port', '8099', '--script', '/flag.json', '--dimensions', '64'], env)).toMatchObject({
      port: 8099,
      scriptPath: '/flag.json',
      embeddingDimensions: 64,
    });
  });

  it('names a bad value', () => {
    expect(() => loadModelServerConfig(['--port', 'eighty'], {})).toThrow(/config\.port/);
    expect(() => loadModelServerConfig(['--bogus'], {})).toThrow(/bogus/);
  });
});
