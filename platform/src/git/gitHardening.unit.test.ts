import { driverPins, hardenedGitArgs, hardenedGitEnv, mayRunDrivers, repositoryLocalKeys, splitGlobalOptions } from './gitHardening';

describe('the git hardening', () => {
  it("puts the pins after the caller's global options and before the command, and keeps status out of submodules", () => {
    const args = hardenedGitArgs(['-C', '/repo', '-c', 'core.fsmonitor=evil', 'status', '--porcelain'], { driverPins: ['--config-env=filter.x.clean=E'] });
    const status = args.indexOf('status');
    expect(args.slice(0, 4)).toEqual(['-C', '/repo', '-c', 'core.fsmonitor=evil']);
    expect(args.slice(status)).toEqual(['status', '--ignore-submodules=all', '--porcelain']);
    expect(hardenedGitArgs(['status', '--ignore-submodules=dirty']).slice(-2)).toEqual(['status', '--ignore-submodules=dirty']);
    const pinned = args.slice(4, status);
    expect(pinned[0]).toBe('--no-pager');
    expect(pinned).toEqual(expect.arrayContaining(['core.fsmonitor=false', 'core.hooksPath=/dev/null', 'protocol.allow=never', 'protocol.https.allow=always', 'protocol.ssh.allow=always']));
    // The caller's own fsmonitor comes first, so the pin (later) wins.
    expect(args.indexOf('core.fsmonitor=false')).toBeGreaterThan(args.indexOf('core.fsmonitor=evil'));
    expect(pinned.at(-1)).toBe('--config-env=filter.x.clean=E');
  });

  it('splits global options from the command', () => {
    expect(splitGlobalOptions(['-C', 'a', '--git-dir=x', '--no-replace-objects', 'log', '-C', 'b'])).toEqual({
      global: ['-C', 'a', '--git-dir=x', '--no-replace-objects'],
      command: ['log', '-C', 'b'],
    });
    expect(splitGlobalOptions(['--version'])).toEqual({ global: [], command: ['--version'] });
    expect(splitGlobalOptions(['-C'])).toEqual({ global: ['-C'], command: [] });
  });

  it('reads repository drivers only for commands that may run one', () => {
    expect(mayRunDrivers(['status'])).toBe(true);
    expect(mayRunDrivers(['worktree', 'add', 'x'])).toBe(true);
    expect(mayRunDrivers(['log', '-1'])).toBe(true);
    expect(mayRunDrivers(['grep', '--textconv', 'x'])).toBe(true);
    expect(mayRunDrivers(['rev-parse', 'HEAD'])).toBe(false);
    expect(mayRunDrivers(['worktree', 'list'])).toBe(false);
    expect(mayRunDrivers(['grep', '--no-index', 'x'])).toBe(false);
    expect(mayRunDrivers(['--version'])).toBe(false);
  });

  it('pins every driver a repository-local key names, whatever its name', () => {
    const keys = repositoryLocalKeys(['local', 'filter.lfs.smudge', 'global', 'filter.ops.clean', 'worktree', 'diff.a=b.c.textconv', 'local', 'merge.m.driver', ''].join('\0'));
    expect(keys).toEqual(['filter.lfs.smudge', 'diff.a=b.c.textconv', 'merge.m.driver']);
    expect(driverPins(keys)).toEqual([
      '--config-env=filter.lfs.clean=KEELSON_GIT_PIN_EMPTY',
      '--config-env=filter.lfs.smudge=KEELSON_GIT_PIN_EMPTY',
      '--config-env=filter.lfs.process=KEELSON_GIT_PIN_EMPTY',
      '--config-env=filter.lfs.required=KEELSON_GIT_PIN_FALSE',
      '--config-env=diff.a=b.c.command=KEELSON_GIT_PIN_EMPTY',
      '--config-env=diff.a=b.c.textconv=KEELSON_GIT_PIN_EMPTY',
      '--config-env=merge.m.driver=KEELSON_GIT_PIN_EMPTY',
    ]);
  });

  it('keeps the identity, global config, CA bundle and ssh command of the environment, and drops every other GIT_ variable', () => {
    const env = hardenedGitEnv({
      PATH: '/usr/bin',
      HOME: '/home/me',
      GIT_AUTHOR_NAME: 'Me',
      GIT_CONFIG_GLOBAL: '/home/me/.gitconfig',
      GIT_SSL_CAINFO: '/ca.pem',
      GIT_SSH_COMMAND: 'ssh -i /key',
      GIT_DIR: '/elsewhere/.git',
      GIT_CONFIG_PARAMETERS: "'core.hooksPath'='/evil'",
      GIT_CONFIG_COUNT: '1',
      GIT_EXEC_PATH: '/evil',
      GIT_TRACE_CURL: '1',
      GIT_ALLOW_PROTOCOL: 'file:ext',
      GIT_SSL_NO_VERIFY: '1',
      KEELSON_GIT_PASSWORD: 'from-the-environment',
    });
    expect(env).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/me',
      GIT_AUTHOR_NAME: 'Me',
      GIT_CONFIG_GLOBAL: '/home/me/.gitconfig',
      GIT_SSL_CAINFO: '/ca.pem',
      GIT_SSH_COMMAND: 'ssh -i /key',
      GIT_TERMINAL_PROMPT: '0',
      GIT_ASKPASS: '',
      SSH_ASKPASS: '',
      SSH_ASKPASS_REQUIRE: 'never',
      GCM_INTERACTIVE: 'never',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_ALLOW_PROTOCOL: 'https:ssh',
      GIT_EDITOR: 'true',
      GIT_SEQUENCE_EDITOR: 'true',
      GIT_PAGER: 'cat',
      GIT_OPTIONAL_LOCKS: '0',
      LC_ALL: 'C',
      KEELSON_GIT_PIN_EMPTY: '',
      KEELSON_GIT_PIN_FALSE: 'false',
    });
    expect(hardenedGitEnv({}, { allowProtocols: ['file'], credentials: { username: 'u', password: 'p' } })).toMatchObject({
      GIT_ALLOW_PROTOCOL: 'https:ssh:file',
      GIT_SSH_COMMAND: 'ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new',
      KEELSON_GIT_USERNAME: 'u',
      KEELSON_GIT_PASSWORD: 'p',
    });
  });

  it('answers credentials from the environment only, after resetting every other helper', () => {
    const args = hardenedGitArgs(['clone', 'x'], { credentials: { username: 'u', password: 'secret-value' } });
    const helpers = args.filter((a) => a.startsWith('credential.helper='));
    expect(helpers).toHaveLength(2);
    expect(helpers[0]).toBe('credential.helper=');
    expect(helpers[1]).toContain('$KEELSON_GIT_PASSWORD');
    expect(args.join(' ')).not.toContain('secret-value');
  });
});
