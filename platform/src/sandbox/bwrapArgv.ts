import { sep } from 'node:path';

/** What one confined process may see and touch. Every path absolute and canonical. */
export interface SandboxSpec {
  /** The command and its arguments. */
  argv: readonly string[];
  /** Where it starts; normally also in `writable`. */
  cwd: string;
  /** Directories (or files) it may write: the run's cwd, `$ARTIFACTS_DIR`, a CLI's own home. Must exist. */
  writable: readonly string[];
  /** Paths kept readable although a hidden path or the private /tmp covers them (a script file under /tmp). */
  readable?: readonly string[];
  /** Paths inside `writable` mounted read-only again (an existing `.git`, `.keelson`). */
  protect?: readonly string[];
  /**
   * Absent paths inside `writable` that must not be created (`.git`, `.keelson` of a folder without
   * them): an empty read-only directory is mounted there. bwrap makes the mount point, so an empty
   * folder is left behind on the host.
   */
  placeholders?: readonly string[];
  /**
   * Paths replaced by an empty directory (the mesh's own state, `KEELSON_HOME`), also when a writable
   * path contains or equals them (a run whose cwd is the keelson home works in an empty scratch
   * directory); only deeper paths are re-exposed.
   */
  hidden?: readonly string[];
  /** The host's network; false gives it a network namespace of its own with only loopback. */
  network: boolean;
}

type Mount = { path: string; rank: number; args: (path: string) => string[] };

/** Mount kinds, in the order they apply to one path: a hidden path stays hidden even when it is also writable. */
const READ = 0;
const WRITE = 1;
const HIDE = 2;
const PROTECT = 3;

const depth = (path: string) => path.split(sep).filter(Boolean).length;

/**
 * The bubblewrap command line that runs `spec.argv` confined: the whole filesystem read-only
 * (`--ro-bind / /`), fresh `/dev` and `/proc`, a private empty `/tmp`, then the spec's paths — each
 * mounted after every shallower one, so the most specific path wins (`$ARTIFACTS_DIR` under a hidden
 * `KEELSON_HOME` is writable; an existing `.git` under the writable cwd is read-only, an absent one an
 * empty read-only placeholder; for one path, a hidden mount covers a writable one). It gets its own
 * pid, IPC and UTS namespaces (when its first process ends, the kernel kills everything left inside,
 * even a daemon that left the process group), no network unless `spec.network`, no capabilities (root
 * inside cannot remount anything), and it dies with its parent. It stays in the caller's process group
 * and session, so killing that group kills it. Pure: nothing is checked on disk.
 */
export function bwrapArgv(bwrap: string, spec: SandboxSpec): string[] {
  const mounts: Mount[] = [
    { path: '/tmp', rank: HIDE, args: (p) => ['--tmpfs', p] },
    ...(spec.hidden ?? []).map((path) => ({ path, rank: HIDE, args: (p: string) => ['--tmpfs', p] })),
    ...(spec.readable ?? []).map((path) => ({ path, rank: READ, args: (p: string) => ['--ro-bind', p, p] })),
    ...spec.writable.map((path) => ({ path, rank: WRITE, args: (p: string) => ['--bind', p, p] })),
    ...(spec.protect ?? []).map((path) => ({ path, rank: PROTECT, args: (p: string) => ['--ro-bind', p, p] })),
    ...(spec.placeholders ?? []).map((path) => ({ path, rank: PROTECT, args: (p: string) => ['--tmpfs', p, '--remount-ro', p] })),
  ];
  mounts.sort((a, b) => depth(a.path) - depth(b.path) || a.rank - b.rank);
  const args: string[] = [bwrap, '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc'];
  for (const m of mounts) args.push(...m.args(m.path));
  args.push('--unshare-pid', '--unshare-ipc', '--unshare-uts');
  if (!spec.network) args.push('--unshare-net');
  args.push('--cap-drop', 'ALL', '--die-with-parent', '--chdir', spec.cwd, '--', ...spec.argv);
  return args;
}
