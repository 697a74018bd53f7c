import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync, lstatSync, readFileSync, realpathSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import { MeshError } from '@keelson/schema';
import { isInside } from '../confine/canonicalPath';
import { PROTECTED_DIR_NAMES } from '../confine/confinePath';
import { bwrapArgv } from './bwrapArgv';
import { seccompFilterFile, withSeccompFilter } from './seccompFilter';

/**
 * `KEELSON_SANDBOX`: `required` (the default) runs every Bash tool call, bash/script node and
 * harness CLI under bubblewrap and refuses to run them without it; `off` runs them unconfined (a
 * warning is logged). There is deliberately no mode that quietly falls back.
 */
export const SANDBOX_MODES = ['required', 'off'] as const;
export type SandboxMode = (typeof SANDBOX_MODES)[number];

/** The fix a refusal names. */
export const SANDBOX_FIX = 'install bubblewrap (Debian/Ubuntu: apt-get install -y bubblewrap) or set KEELSON_SANDBOX=off to run without confinement';

/** What probing a bubblewrap binary found. */
export interface BwrapProbe {
  /** The binary probed; null when none was found on PATH. */
  path: string | null;
  /** It ran a trivial confined command here. */
  ok: boolean;
  /** `bubblewrap 0.8.0`. */
  version: string | null;
  /** Why it cannot be used. */
  error: string | null;
}

/** A command refused because the sandbox it must run in is unavailable. */
export class SandboxUnavailableError extends MeshError {
  constructor(what: string, probe: BwrapProbe) {
    super('CAPABILITY_UNSUPPORTED', `${what} refused: KEELSON_SANDBOX=required and the sandbox is unavailable (${probe.error}); ${SANDBOX_FIX}`, {
      bwrap: probe.path,
    });
  }
}

/** The first executable `bwrap` on `PATH`, or null. */
export function findBwrap(path: string = process.env.PATH ?? ''): string | null {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, 'bwrap');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

function runQuiet(file: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    execFile(file, args, { timeout: 10_000, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } }, (err, stdout, stderr) => {
      if (err) fail(Object.assign(err, { stderr }));
      else done({ stdout, stderr });
    });
  });
}

const probes = new Map<string, Promise<BwrapProbe>>();

/**
 * Whether `path` (default: `bwrap` on PATH) is a bubblewrap that works on this machine: its version,
 * then a trivial command under the same namespaces the mesh asks for (a container without the
 * privileges for them fails here, not on a user's command). A working binary is remembered for the
 * process's life; a failure is probed again next time (bubblewrap may be installed meanwhile).
 */
export function probeBwrap(path?: string): Promise<BwrapProbe> {
  const bin = path ?? findBwrap();
  if (!bin) return Promise.resolve({ path: null, ok: false, version: null, error: 'no `bwrap` on PATH' });
  const cached = probes.get(bin);
  if (cached) return cached;
  const probe = (async (): Promise<BwrapProbe> => {
    let version: string;
    try {
      version = (await runQuiet(bin, ['--version'])).stdout.trim();
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return { path: bin, ok: false, version: null, error: code === 'ENOENT' ? `${bin} not found` : `${bin} --version failed: ${(err as Error).message}` };
    }
    try {
      await runQuiet(bin, bwrapArgv(bin, { argv: ['true'], cwd: '/', writable: [], network: false }).slice(1));
    } catch (err) {
      const stderr = String((err as { stderr?: string }).stderr ?? '').trim();
      return { path: bin, ok: false, version, error: `${bin} cannot create a sandbox here: ${stderr || (err as Error).message}` };
    }
    return { path: bin, ok: true, version, error: null };
  })();
  probes.set(bin, probe);
  void probe.then((p) => {
    if (!p.ok) probes.delete(bin);
  });
  return probe;
}

/** What to run confined, as a caller states it (see {@link ProcessSandbox.command}). */
export interface SandboxRequest {
  /** The command and its arguments. */
  argv: readonly string[];
  cwd: string;
  /** Directories it may write (the cwd and `$ARTIFACTS_DIR`, a CLI's home); they must exist. */
  writable: readonly string[];
  /** Files or directories to keep readable although the private /tmp or a hidden path would cover them. */
  readable?: readonly string[];
  /** @default false: a network namespace with only loopback */
  network?: boolean;
  /**
   * The command may write the cwd's git metadata (`.git`, a worktree's git directories) — to commit.
   * Without it a worktree's git directories are still readable (git works), never writable. @default false
   */
  gitWrite?: boolean;
  /** Names the command in a refusal ("Bash", `bash node "build"`). */
  what: string;
}

/** How a request will run. */
export interface SandboxedCommand {
  argv: string[];
  sandboxed: boolean;
}

export interface SandboxOptions {
  /** @default 'required' */
  mode?: SandboxMode;
  /** The bubblewrap binary. @default the first `bwrap` on PATH */
  bwrap?: string;
  /** Paths every sandboxed command sees as empty (the mesh's own state: `KEELSON_HOME`), except what a request binds back. */
  hidden?: readonly string[];
  /** Told once, at creation, when the mode is `off`. */
  warn?: (message: string) => void;
}

/** The mesh's process sandbox (bubblewrap), as one consumer configured it. */
export interface ProcessSandbox {
  readonly mode: SandboxMode;
  /**
   * The command line that runs the request: under bubblewrap (see `bwrapArgv`: read-only root, the
   * writable paths and a private /tmp writable, the hidden paths and host socket folders empty,
   * existing `.git` and `.keelson` of each writable directory read-only — for `gitWrite` the `.git`
   * writable except its hooks and config —, the cwd's absent ones as empty read-only placeholders,
   * no ptrace, no network and no Unix sockets unless `network`), or as given when the mode is `off`.
   * @throws SandboxUnavailableError (`CAPABILITY_UNSUPPORTED`) when the mode is `required` and bubblewrap is missing or unusable
   */
  command(request: SandboxRequest): Promise<SandboxedCommand>;
  /** The binary and whether it works (for `npm run doctor`). */
  probe(): Promise<BwrapProbe>;
}

/** The `.git` / `.keelson` entries of each writable directory that exist, as realpaths still inside a writable one. */
export function protectedEntries(writable: readonly string[], names: readonly string[] = PROTECTED_DIR_NAMES): string[] {
  const out = new Set<string>();
  for (const dir of writable) {
    for (const name of names) {
      const entry = join(dir, name);
      try {
        lstatSync(entry);
      } catch {
        continue;
      }
      let real: string;
      try {
        real = realpathSync(entry);
      } catch {
        continue; // a dangling symlink: nothing to protect behind it
      }
      if (writable.some((w) => isInside(w, real))) out.add(real);
    }
  }
  return [...out];
}

/**
 * The git directories a commit in `cwd` writes: `<cwd>/.git` when it is a directory; for a worktree
 * (`.git` is a `gitdir:` file) its own git directory and the repository's common one.
 */
export function gitDirsOf(cwd: string): string[] {
  const dotGit = join(cwd, '.git');
  let text: string;
  try {
    // A directory without HEAD is no repository (an empty placeholder left by an earlier sandbox).
    if (lstatSync(dotGit).isDirectory()) return existsSync(join(dotGit, 'HEAD')) ? [realpathSync(dotGit)] : [];
    text = readFileSync(dotGit, 'utf8');
  } catch {
    return [];
  }
  const m = /^gitdir:\s*(.+)$/m.exec(text);
  if (!m) return [];
  const gitdir = resolve(cwd, m[1]!.trim());
  const dirs = [gitdir];
  try {
    const common = readFileSync(join(gitdir, 'commondir'), 'utf8').trim();
    dirs.push(isAbsolute(common) ? common : resolve(gitdir, common));
  } catch {
    // not a linked worktree
  }
  return dirs.filter((d) => existsSync(d)).map((d) => realpathSync(d));
}

/**
 * The parts of a git directory that make git run commands or read another directory's (hooks, the
 * config with its command-valued keys and includes, a worktree's `config.worktree`, `commondir`,
 * `gitdir`): kept read-only for a `gitWrite` command, which writes objects and refs around them.
 */
export const GIT_CONTROL_ENTRIES: readonly string[] = ['hooks', 'config', 'config.worktree', 'commondir', 'gitdir'];

/** The {@link GIT_CONTROL_ENTRIES} that exist in `gitDirs`, as realpaths. */
export function gitControlEntries(gitDirs: readonly string[]): string[] {
  const out: string[] = [];
  for (const dir of gitDirs) {
    for (const name of GIT_CONTROL_ENTRIES) {
      const entry = join(dir, name);
      try {
        lstatSync(entry);
        out.push(realpathSync(entry));
      } catch {
        // absent (or a dangling link): nothing to protect
      }
    }
  }
  return [...new Set(out)];
}

const lexists = (path: string): boolean => {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
};

/**
 * Where an empty read-only folder stands in for an absent one, so a command cannot create it: the
 * cwd's `.git` and `.keelson` (no `git init` planting hooks, no workflows planted in a project that
 * had none), and for a `gitWrite` command the repository's `hooks` folder.
 */
export function placeholdersFor(cwd: string, writable: readonly string[], gitDirs: readonly string[], gitWrite: boolean): string[] {
  const out: string[] = [];
  if (writable.some((w) => isInside(w, cwd))) {
    for (const name of PROTECTED_DIR_NAMES) if (!lexists(join(cwd, name))) out.push(join(cwd, name));
  }
  const common = gitDirs.at(-1);
  if (gitWrite && common && !lexists(join(common, 'hooks'))) out.push(join(common, 'hooks'));
  return out;
}

/**
 * The folder the mesh runs from (the one holding its `node_modules`: the harness CLIs, the node
 * scripts of nodes). Kept readable inside the sandbox even when it lies under the private /tmp (a CI
 * checkout in /tmp) or a hidden path.
 */
export const MESH_INSTALL_ROOT = realpathSync(resolve(__dirname, '..', '..', '..'));

/**
 * Where a host keeps its services' Unix sockets (Postgres in `/run/postgresql`, D-Bus in `/run/dbus`
 * and `/run/user/<uid>`, Docker's `/run/docker.sock`, MySQL in `/run/mysqld`). `--unshare-net`
 * cuts IP and abstract sockets, not these paths: every sandbox gets them as empty tmpfs, whatever its
 * network setting (`/tmp` is private already).
 */
export const HOST_SOCKET_DIRS: readonly string[] = ['/run', '/var/run'];

/** The socket folders present here, canonical and once each (`/var/run` is usually a link to `/run`). */
export function hostSocketDirs(candidates: readonly string[] = HOST_SOCKET_DIRS): string[] {
  const dirs = candidates.filter((p) => existsSync(p)).map((p) => realpathSync(p));
  return [...new Set(dirs)];
}

/**
 * Files the sandbox still reads from under a covered socket folder: `/etc/resolv.conf` where it links
 * into `/run` (systemd-resolved), so a node with `network: true` keeps name resolution.
 */
function socketDirExceptions(covered: readonly string[]): string[] {
  try {
    const resolv = realpathSync('/etc/resolv.conf');
    return covered.some((dir) => isInside(dir, resolv)) ? [resolv] : [];
  } catch {
    return [];
  }
}

/** A sandbox for one consumer (the rib host's Bash, the worker's command nodes, the harness CLIs). */
export function createSandbox(options: SandboxOptions = {}): ProcessSandbox {
  const mode = options.mode ?? 'required';
  if (mode === 'off') {
    options.warn?.('KEELSON_SANDBOX=off: Bash tool calls, bash/script nodes and harness CLIs run without bubblewrap — with the whole filesystem writable, the network and this user\'s access');
  }
  return {
    mode,
    probe: () => probeBwrap(options.bwrap),
    async command(request) {
      if (mode === 'off') return { argv: [...request.argv], sandboxed: false };
      const probe = await probeBwrap(options.bwrap);
      if (!probe.ok) throw new SandboxUnavailableError(request.what, probe);
      // A worktree's git directories live elsewhere (possibly under /tmp or the hidden home): bound
      // back read-only so git works, or writable for a gitWrite command.
      const allGitDirs = gitDirsOf(request.cwd);
      const gitDirs = allGitDirs.filter((d) => !request.writable.some((w) => isInside(w, d)));
      const writable = request.gitWrite ? [...request.writable, ...gitDirs] : [...request.writable];
      const sockets = hostSocketDirs();
      const readable = [MESH_INSTALL_ROOT, ...(request.readable ?? []), ...(request.gitWrite ? [] : gitDirs), ...socketDirExceptions(sockets)].filter((p) => existsSync(p));
      // gitWrite opens the repository's own git directories, and nothing else named .git.
      const protect = protectedEntries(request.writable).filter((p) => !(request.gitWrite && allGitDirs.includes(p)));
      const argv = bwrapArgv(probe.path!, {
        argv: request.argv,
        cwd: request.cwd,
        hidden: [...(options.hidden ?? []).filter((p) => existsSync(p)), ...sockets],
        readable,
        writable,
        protect: [...protect, ...(request.gitWrite ? gitControlEntries(allGitDirs) : [])],
        placeholders: placeholdersFor(request.cwd, request.writable, allGitDirs, request.gitWrite ?? false),
        network: request.network ?? false,
      });
      // Always no ptrace of anything; without the network, no Unix socket either: an AF_UNIX socket()
      // fails, so socket files the tmpfs covers do not matter and abstract ones are out of reach too.
      const filter = seccompFilterFile({ denyUnixSockets: !request.network });
      return { argv: filter ? withSeccompFilter(argv, filter) : argv, sandboxed: true };
    },
  };
}
