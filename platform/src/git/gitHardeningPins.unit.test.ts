import {
  DEFAULT_SSH_COMMAND,
  DRIVER_KEYS_REGEXP,
  driverPins,
  GIT_PROTOCOLS,
  hardenedGitArgs,
  hardenedGitEnv,
  KEPT_GIT_ENV,
  mayRunDrivers,
  pinnedConfig,
  repositoryLocalKeys,
  splitGlobalOptions,
} from './gitHardening';

describe('the pinned git configuration', () => {
  it('pins every setting a repository could turn into a command, a prompt or a transport, in this order', () => {
    expect(pinnedConfig()).toEqual([
      ['core.fsmonitor', 'false'],
      ['core.hooksPath', '/dev/null'],
      ['core.sshCommand', DEFAULT_SSH_COMMAND],
      ['core.askPass', ''],
      ['credential.helper', ''],
      ['diff.external', ''],
      ['submodule.recurse', 'false'],
      ['diff.ignoreSubmodules', 'all'],
      ['commit.gpgSign', 'false'],
      ['tag.gpgSign', 'false'],
      ['log.showSignature', 'false'],
      ['gpg.program', 'gpg'],
      ['gpg.openpgp.program', 'gpg'],
      ['gpg.x509.program', 'gpgsm'],
      ['gpg.ssh.program', 'ssh-keygen'],
      ['gc.auto', '0'],
      ['maintenance.auto', 'false'],
      ['init.templateDir', ''],
      ['core.alternateRefsCommand', ''],
      ['core.gitProxy', ''],
      ['safe.bareRepository', 'explicit'],
      ['http.followRedirects', 'false'],
      ['protocol.allow', 'never'],
      ['protocol.https.allow', 'always'],
      ['protocol.ssh.allow', 'always'],
    ]);
    expect(DEFAULT_SSH_COMMAND).toBe('ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new');
    expect(GIT_PROTOCOLS).toEqual(['https', 'ssh']);
  });

  it("takes the caller's ssh command, and allows extra transports only by a well-formed name, once each", () => {
    const pins = pinnedConfig({ sshCommand: 'ssh -F /dev/null', allowProtocols: ['file', 'ext;rm -rf', 'Git', '', 'ssh', 'git+ssh'] });
    expect(pins).toContainEqual(['core.sshCommand', 'ssh -F /dev/null']);
    expect(pins.filter(([key]) => key.startsWith('protocol.')).map(([key]) => key)).toEqual([
      'protocol.allow',
      'protocol.https.allow',
      'protocol.ssh.allow',
      'protocol.file.allow',
      'protocol.git+ssh.allow',
    ]);
    expect(hardenedGitEnv({}, { allowProtocols: ['file', 'ext;x', 'ssh'] }).GIT_ALLOW_PROTOCOL).toBe('https:ssh:file');
  });

  it('adds a credential helper that answers only `get`, from the environment, after the reset', () => {
    const pins = pinnedConfig({ credentials: { username: 'u', password: 'p' } });
    expect(pins.filter(([key]) => key === 'credential.helper')).toEqual([
      ['credential.helper', ''],
      ['credential.helper', `!f() { test "$1" = get || exit 0; printf 'username=%s\\npassword=%s\\n' "$KEELSON_GIT_USERNAME" "$KEELSON_GIT_PASSWORD"; }; f`],
    ]);
    expect(pins.at(-1)![0]).toBe('credential.helper');
  });

  it('passes every pin as its own -c pair, right after --no-pager', () => {
    const args = hardenedGitArgs(['rev-parse', 'HEAD']);
    expect(args.slice(0, 5)).toEqual(['--no-pager', '-c', 'core.fsmonitor=false', '-c', 'core.hooksPath=/dev/null']);
    expect(args.slice(-4)).toEqual(['-c', 'protocol.ssh.allow=always', 'rev-parse', 'HEAD']);
    expect(args).toHaveLength(1 + 2 * pinnedConfig().length + 2);
  });
});

describe('the transport programs a local remote cannot choose', () => {
  it.each([
    ['fetch', '--upload-pack=git-upload-pack'],
    ['pull', '--upload-pack=git-upload-pack'],
    ['ls-remote', '--upload-pack=git-upload-pack'],
    ['clone', '--upload-pack=git-upload-pack'],
    ['push', '--receive-pack=git-receive-pack'],
  ])('%s runs %s', (sub, option) => {
    expect(hardenedGitArgs(['-C', '/r', sub, 'origin']).slice(-3)).toEqual([sub, option, 'origin']);
  });

  it('leaves other commands, and a call without one, as they came', () => {
    expect(hardenedGitArgs(['log', '-1']).slice(-2)).toEqual(['log', '-1']);
    expect(hardenedGitArgs(['-C', '/r']).at(-1)).toBe('protocol.ssh.allow=always');
    expect(hardenedGitArgs(['status', '--ignore-submodules']).slice(-2)).toEqual(['status', '--ignore-submodules']);
    expect(hardenedGitArgs(['status']).slice(-2)).toEqual(['status', '--ignore-submodules=all']);
  });
});

describe('splitGlobalOptions', () => {
  it.each([['-C'], ['-c'], ['--git-dir'], ['--work-tree'], ['--namespace'], ['--config-env'], ['--super-prefix'], ['--list-cmds'], ['--attr-source']])(
    '%s takes the next argument as its value',
    (option) => {
      expect(splitGlobalOptions([option, 'value', 'status'])).toEqual({ global: [option, 'value'], command: ['status'] });
    },
  );

  it('stops at --version and --help, which are commands of their own', () => {
    expect(splitGlobalOptions(['-C', 'a', '--help', 'x'])).toEqual({ global: ['-C', 'a'], command: ['--help', 'x'] });
    expect(splitGlobalOptions(['--bare', '--version'])).toEqual({ global: ['--bare'], command: ['--version'] });
    expect(splitGlobalOptions([])).toEqual({ global: [], command: [] });
  });
});

describe('mayRunDrivers', () => {
  it.each(['--version', 'version', 'config', 'rev-parse', 'init', 'clone', 'ls-remote', 'var', 'symbolic-ref', 'show-ref', 'for-each-ref'])(
    '%s never runs a driver',
    (sub) => {
      expect(mayRunDrivers([sub, 'x'])).toBe(false);
    },
  );

  it.each([['worktree', 'prune'], ['worktree', 'list']])('%s %s never runs a driver', (sub, next) => {
    expect(mayRunDrivers([sub, next])).toBe(false);
  });

  it.each([[['diff']], [['checkout', 'main']], [['worktree', 'remove']], [['grep', 'x', '--textconv']], [['list']], [['prune']], [['merge']], [['checkout', 'list']], [['log', 'prune']]])(
    '%j may run one',
    (command) => {
      expect(mayRunDrivers(command)).toBe(true);
    },
  );

  it('says no for no command at all', () => {
    expect(mayRunDrivers([])).toBe(false);
  });
});

describe('driverPins', () => {
  it('pins a driver once however many of its keys are named, whatever case its section is in', () => {
    expect(driverPins(['FILTER.x.clean', 'filter.x.smudge', 'Merge.y.name', 'merge.y.driver'])).toEqual([
      '--config-env=filter.x.clean=KEELSON_GIT_PIN_EMPTY',
      '--config-env=filter.x.smudge=KEELSON_GIT_PIN_EMPTY',
      '--config-env=filter.x.process=KEELSON_GIT_PIN_EMPTY',
      '--config-env=filter.x.required=KEELSON_GIT_PIN_FALSE',
      '--config-env=merge.y.driver=KEELSON_GIT_PIN_EMPTY',
    ]);
  });

  it('keeps a driver name with dots in it whole, and skips keys that name no driver', () => {
    expect(driverPins(['diff.a.b.textconv'])).toEqual(['--config-env=diff.a.b.command=KEELSON_GIT_PIN_EMPTY', '--config-env=diff.a.b.textconv=KEELSON_GIT_PIN_EMPTY']);
    expect(driverPins(['filter', 'filter.clean', 'core.x.y', 'user.name', ''])).toEqual([]);
  });

  it('is asked for exactly the filter, diff and merge sections with a driver name', () => {
    const re = new RegExp(DRIVER_KEYS_REGEXP);
    expect(['filter.x.clean', 'diff.a.b.textconv', 'merge.m.driver'].every((k) => re.test(k))).toBe(true);
    expect(['filter.clean', 'core.filter.x', 'xdiff.a.b', 'merge..'].some((k) => re.test(k))).toBe(false);
  });
});

describe('repositoryLocalKeys', () => {
  it('keeps local and worktree keys only, and ignores a trailing half pair', () => {
    expect(repositoryLocalKeys('local\0a.b.c\0system\0d.e.f\0command\0g.h.i\0worktree\0j.k.l\0local')).toStrictEqual(['a.b.c', 'j.k.l']);
    expect(repositoryLocalKeys('')).toEqual([]);
  });
});

describe('hardenedGitEnv', () => {
  it.each([...KEPT_GIT_ENV].filter((name) => name !== 'GIT_SSH_COMMAND'))('keeps %s', (name) => {
    expect(hardenedGitEnv({ [name]: 'v' })[name]).toBe('v');
  });

  it('keeps exactly the identity, dates, global config, CA bundle and ssh command', () => {
    expect([...KEPT_GIT_ENV].sort()).toEqual([
      'GIT_AUTHOR_DATE', 'GIT_AUTHOR_EMAIL', 'GIT_AUTHOR_NAME', 'GIT_COMMITTER_DATE', 'GIT_COMMITTER_EMAIL', 'GIT_COMMITTER_NAME',
      'GIT_CONFIG_GLOBAL', 'GIT_SSH_COMMAND', 'GIT_SSL_CAINFO', 'GIT_SSL_CAPATH',
    ]);
  });

  it('drops undefined values and every KEELSON_GIT_ variable, keeps other variables, and keeps the locale when asked', () => {
    const env = hardenedGitEnv({ UNSET: undefined, KEELSON_GIT_USERNAME: 'x', KEELSON_GIT_OTHER: 'y', LC_ALL: 'de_DE.UTF-8', GITX: 'kept' }, { keepLocale: true });
    expect(env).not.toHaveProperty('UNSET');
    expect(env).not.toHaveProperty('KEELSON_GIT_USERNAME');
    expect(env).not.toHaveProperty('KEELSON_GIT_OTHER');
    expect(env.LC_ALL).toBe('de_DE.UTF-8');
    expect(env.GITX).toBe('kept');
    expect(hardenedGitEnv({ LC_ALL: 'de_DE.UTF-8' }).LC_ALL).toBe('C');
    expect(hardenedGitEnv({ GIT_SSH_COMMAND: '' }).GIT_SSH_COMMAND).toBe(DEFAULT_SSH_COMMAND);
    expect(hardenedGitEnv({})).not.toHaveProperty('KEELSON_GIT_PASSWORD');
  });
});
