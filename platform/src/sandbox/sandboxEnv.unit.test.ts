import { isSecretName, sandboxEnv } from './sandboxEnv';

describe('sandboxEnv', () => {
  const host = {
    PATH: '/usr/bin:/bin',
    HOME: '/home/dev',
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    TERM: 'xterm',
    GIT_AUTHOR_NAME: 'Dev',
    GOPATH: '/home/dev/go',
    DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/keelson',
    KEELSON_CREDENTIALS_KEY: 'a'.repeat(64),
    KEELSON_ASSERTION_SECRET: 'shh',
    KEELSON_MODEL_API_KEY: 'sk-model',
    KEELSON_HOME: '/home/dev/.keelson',
    ANTHROPIC_API_KEY: 'sk-ant',
    OPENAI_API_KEY: 'sk-oai',
    TEMPORAL_ADDRESS: '127.0.0.1:7233',
    PGPASSWORD: 'pw',
    GITHUB_TOKEN: 'ghp_x',
    AWS_SECRET_ACCESS_KEY: 'aws',
    SSH_AUTH_SOCK: '/tmp/ssh-agent',
    NODE_OPTIONS: '--require /tmp/evil.js',
    UNDEFINED: undefined,
  };

  it('keeps only the allowlisted variables: no database URL, Temporal, mesh configuration, keys or tokens', () => {
    expect(sandboxEnv(host)).toEqual({
      PATH: '/usr/bin:/bin',
      HOME: '/home/dev',
      LANG: 'C.UTF-8',
      LC_ALL: 'C.UTF-8',
      TERM: 'xterm',
      GIT_AUTHOR_NAME: 'Dev',
      GOPATH: '/home/dev/go',
    });
  });

  it('passes extra names a caller asks for, but never a secret-looking one', () => {
    expect(sandboxEnv({ ...host, CI: '1', MY_API_KEY: 'x' }, ['CI', 'MY_API_KEY', 'DATABASE_URL'])).toMatchObject({ CI: '1' });
    expect(sandboxEnv({ ...host, MY_API_KEY: 'x' }, ['MY_API_KEY'])).not.toHaveProperty('MY_API_KEY');
  });

  it.each([
    ['DATABASE_URL', true], ['KEELSON_CREDENTIALS_KEY', true], ['KEELSON_ASSERTION_SECRET', true], ['TEMPORAL_ADDRESS', true],
    ['OPENAI_API_KEY', true], ['my_apikey', true], ['SLACK_BOT_TOKEN', true], ['DB_PASSWORD', true], ['HTTP_AUTH', true],
    ['PGHOST', true], ['GIT_AUTHOR_NAME', false], ['PATH', false], ['LANG', false], ['PAGER', false],
  ])('%s is secret-looking: %s', (name, secret) => {
    expect(isSecretName(name)).toBe(secret);
  });
});
