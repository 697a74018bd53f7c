import { isSecretName, SANDBOX_ENV_ALLOWED, sandboxEnv } from './sandboxEnv';

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

  it.each([
    'PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LANGUAGE', 'LC_ALL', 'LC_CTYPE', 'LC_TIME', 'TZ',
    'TERM', 'COLORTERM', 'NO_COLOR', 'EDITOR', 'VISUAL', 'PAGER',
    'GIT_AUTHOR_NAME', 'GIT_AUTHOR_EMAIL', 'GIT_COMMITTER_NAME', 'GIT_COMMITTER_EMAIL', 'GIT_CONFIG_NOSYSTEM',
    'GOPATH', 'GOROOT', 'GOCACHE', 'GOMODCACHE', 'CARGO_HOME', 'RUSTUP_HOME', 'JAVA_HOME', 'NVM_DIR', 'NODE_PATH', 'PYENV_ROOT', 'VIRTUAL_ENV',
    'SSL_CERT_FILE', 'SSL_CERT_DIR', 'NODE_EXTRA_CA_CERTS',
  ])('passes %s through unchanged', (name) => {
    expect(sandboxEnv({ [name]: `value of ${name}` })).toEqual({ [name]: `value of ${name}` });
  });

  it('allows exactly those names: 33 of them and the LC_* family', () => {
    expect(SANDBOX_ENV_ALLOWED.filter((rule) => typeof rule === 'string')).toHaveLength(33);
    expect(SANDBOX_ENV_ALLOWED.filter((rule) => rule instanceof RegExp)).toHaveLength(1);
  });

  it.each(['LC_', 'XLC_ALL', 'LC_ALL2', 'LC_all', 'PATHS', 'XPATH', 'NODE_OPTIONS', 'LD_PRELOAD', 'BASH_ENV', ''])(
    'drops %j, which only resembles an allowed name',
    (name) => {
      expect(sandboxEnv({ [name]: 'x' })).toEqual({});
    },
  );

  it('drops a secret-looking name even when the allowlist or a caller names it', () => {
    expect(sandboxEnv({ PATH: '/bin', GIT_AUTH_TOKEN: 't' }, ['GIT_AUTH_TOKEN'])).toEqual({ PATH: '/bin' });
  });

  it.each([
    ['AUTH', true], ['AUTHORIZATION', true], ['PROXY_AUTHORIZATION', true], ['AUTH_HEADER', true], ['X_AUTH_MODE', true],
    ['AUTHOR', false], ['OAUTHLIB_DEBUG', false], ['AUTHORS_FILE', false],
    ['PG', true], ['PGDATA', true], ['MYPG', false], ['PG_1', false],
    ['TEMPORAL_', true], ['MY_TEMPORAL_X', false], ['KEELSON_HOME', true], ['NOT_KEELSON_X', false],
    ['AWS_REGION', true], ['AZURE_X', true], ['GOOGLE_X', true], ['GCP_X', true], ['GH_X', true], ['GITHUB_X', true],
    ['NPM_CONFIG_REGISTRY', true], ['SSH_AGENT_PID', true],
    ['MY_AWS_X', false], ['MY_GH_X', false], ['MY_SSH_X', false], ['MY_GOOGLE_X', false], ['MY_AZURE_X', false], ['MY_GCP_X', false], ['MY_GITHUB_X', false], ['MY_NPM_CONFIG_X', false],
    ['PASSWD_FILE', true], ['COOKIE_JAR', true], ['CREDENTIALS_PATH', true], ['SECRET', true], ['token', true],
  ])('%s marks a secret or the mesh wiring: %s', (name, secret) => {
    expect(isSecretName(name)).toBe(secret);
  });
});
