import { bwrapArgv } from './bwrapArgv';

describe('bwrapArgv', () => {
  const spec = {
    argv: ['bash', '-c', 'make test'],
    cwd: '/work/project',
    writable: ['/work/project', '/home/dev/.keelson/runs/r1/artifacts'],
    readable: ['/tmp/keelson/scripts/build.sh'],
    protect: ['/work/project/.git'],
    hidden: ['/home/dev/.keelson'],
    network: false,
  };

  it('mounts the root read-only, then each path after every shallower one (the most specific wins)', () => {
    expect(bwrapArgv('/usr/bin/bwrap', spec)).toEqual([
      '/usr/bin/bwrap', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc',
      '--tmpfs', '/tmp',
      '--bind', '/work/project', '/work/project',
      '--tmpfs', '/home/dev/.keelson',
      '--ro-bind', '/work/project/.git', '/work/project/.git',
      '--ro-bind', '/tmp/keelson/scripts/build.sh', '/tmp/keelson/scripts/build.sh',
      '--bind', '/home/dev/.keelson/runs/r1/artifacts', '/home/dev/.keelson/runs/r1/artifacts',
      '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-net',
      '--cap-drop', 'ALL', '--die-with-parent', '--chdir', '/work/project', '--', 'bash', '-c', 'make test',
    ]);
  });

  it('keeps a hidden path hidden when the writable cwd is that path or contains it; deeper paths come back', () => {
    const home = '/home/dev/.keelson';
    const args = bwrapArgv('bwrap', { argv: ['true'], cwd: home, writable: [home, `${home}/runs/r1/artifacts`], hidden: [home], network: false });
    expect(args.slice(8, args.indexOf('--unshare-pid'))).toEqual([
      '--tmpfs', '/tmp',
      '--bind', home, home,
      '--tmpfs', home,
      '--bind', `${home}/runs/r1/artifacts`, `${home}/runs/r1/artifacts`,
    ]);
  });

  it('mounts an empty read-only folder where a placeholder stands in for an absent one', () => {
    const args = bwrapArgv('bwrap', { ...spec, placeholders: ['/work/project/.keelson'] });
    const at = args.indexOf('/work/project/.keelson');
    expect(args.slice(at - 1, at + 3)).toEqual(['--tmpfs', '/work/project/.keelson', '--remount-ro', '/work/project/.keelson']);
    expect(at).toBeGreaterThan(args.indexOf('/work/project'));
  });

  it('keeps the host network only when asked', () => {
    expect(bwrapArgv('bwrap', { ...spec, network: true })).not.toContain('--unshare-net');
    expect(bwrapArgv('bwrap', spec)).toContain('--unshare-net');
  });

  it('never starts a new session, so the caller’s process group still reaches it', () => {
    expect(bwrapArgv('bwrap', spec)).not.toContain('--new-session');
  });

  it('mounts only the private /tmp and the writable paths when nothing is hidden, readable or protected', () => {
    expect(bwrapArgv('bwrap', { argv: ['true'], cwd: '/w', writable: ['/w'], network: true })).toEqual([
      'bwrap', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc',
      '--bind', '/w', '/w',
      '--tmpfs', '/tmp',
      '--unshare-pid', '--unshare-ipc', '--unshare-uts',
      '--cap-drop', 'ALL', '--die-with-parent', '--chdir', '/w', '--', 'true',
    ]);
  });

  it('orders the root itself before every path below it, whatever its kind', () => {
    const args = bwrapArgv('bwrap', { argv: ['true'], cwd: '/w', writable: ['/w'], protect: ['/'], network: true });
    expect(args.slice(8, args.indexOf('--unshare-pid'))).toEqual(['--ro-bind', '/', '/', '--bind', '/w', '/w', '--tmpfs', '/tmp']);
  });
});
