import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, envSchema, parseEnv } from './config';

describe('environment config', () => {
  it('applies the documented defaults when nothing is set', () => {
    const env = parseEnv({});
    expect(env.DATABASE_URL).toBe('postgres://postgres@127.0.0.1:5432/keelson');
    expect(env.KEELSON_HOST).toBe('127.0.0.1');
    expect(env.KEELSON_GATEWAY_PORT).toBe(4000);
    expect(env.KEELSON_CLONE_TIMEOUT_MS).toBe(60_000);
    expect(env.KEELSON_AUTH).toBe('on');
    expect(env.TEMPORAL_ADDRESS).toBeUndefined();
  });

  it('fails fast naming every bad variable', () => {
    expect(() => parseEnv({ KEELSON_GATEWAY_PORT: 'eighty', DATABASE_URL: 'nope' })).toThrow(ConfigError);
    try {
      parseEnv({ KEELSON_GATEWAY_PORT: 'eighty', DATABASE_URL: 'nope' });
    } catch (err) {
      expect((err as Error).message).toMatch(/KEELSON_GATEWAY_PORT/);
      expect((err as Error).message).toMatch(/DATABASE_URL/);
    }
  });

  it('treats empty strings as unset and parses flags', () => {
    const env = parseEnv({ KEELSON_GATEWAY_PORT: '', KEELSON_AUTH: 'off', KEELSON_DISABLE_MUTATION_LOCK: 'true' });
    expect(env.KEELSON_GATEWAY_PORT).toBe(4000);
    expect(env.KEELSON_AUTH).toBe('off');
    expect(env.KEELSON_DISABLE_MUTATION_LOCK).toBe(true);
  });

  it('reads KEELSON_GIT_ALLOW_PRIVATE_HOSTS as none, any, or a list of hosts', () => {
    expect(parseEnv({}).KEELSON_GIT_ALLOW_PRIVATE_HOSTS).toEqual([]);
    expect(parseEnv({ KEELSON_GIT_ALLOW_PRIVATE_HOSTS: '0' }).KEELSON_GIT_ALLOW_PRIVATE_HOSTS).toEqual([]);
    expect(parseEnv({ KEELSON_GIT_ALLOW_PRIVATE_HOSTS: '1' }).KEELSON_GIT_ALLOW_PRIVATE_HOSTS).toBe(true);
    expect(parseEnv({ KEELSON_GIT_ALLOW_PRIVATE_HOSTS: '*' }).KEELSON_GIT_ALLOW_PRIVATE_HOSTS).toBe(true);
    expect(parseEnv({ KEELSON_GIT_ALLOW_PRIVATE_HOSTS: ' Git.Internal, 10.0.0.7 ,' }).KEELSON_GIT_ALLOW_PRIVATE_HOSTS).toEqual(['git.internal', '10.0.0.7']);
  });

  it('lists every variable in .env.example, and nothing else', () => {
    const example = readFileSync(join(__dirname, '..', '..', '.env.example'), 'utf8');
    const documented = example
      .split('\n')
      .filter((l) => /^[A-Z_]+=/.test(l))
      .map((l) => l.slice(0, l.indexOf('=')))
      .sort();
    expect(documented).toEqual(Object.keys(envSchema.shape).sort());
  });

  it('documents defaults in .env.example that parse to the schema defaults', () => {
    const example = readFileSync(join(__dirname, '..', '..', '.env.example'), 'utf8');
    const values = Object.fromEntries(
      example.split('\n').filter((l) => /^[A-Z_]+=/.test(l)).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    expect(parseEnv(values)).toEqual(parseEnv({}));
  });
});
