/**
 * What every git process the mesh starts runs with: pinned configuration on the command line
 * (which beats system, global and repository-local config), a scrubbed environment, and the
 * transport allowlist. Pure: `runGit` and the rib host's exec apply it.
 *
 * A repository the mesh reads (a registered project, a clone) is untrusted content, and its
 * `.git/config` is part of that content. What that config can no longer reach:
 *
 * - hooks (`core.hooksPath` pinned to `/dev/null`: no `post-checkout` on `git worktree add`, no
 *   `pre-commit`, …) and the fsmonitor command (`core.fsmonitor=false`, which `git status` would run);
 * - `core.sshCommand` (pinned, and `GIT_SSH_COMMAND`, which wins over it, is always set),
 *   `core.askPass` (pinned empty; `GIT_ASKPASS` empty, no terminal prompt), credential helpers
 *   (`credential.helper` reset to none, the `credential.<url>.helper` lists included), `diff.external`
 *   (pinned empty: a diff that would run it fails instead), the pager (`--no-pager`, `GIT_PAGER=cat`),
 *   editors (`GIT_EDITOR=true`), signing and signature checks (off; the gpg programs pinned to their
 *   defaults), auto gc/maintenance, and template hooks (`init.templateDir` empty);
 * - transports: only https and ssh (`protocol.allow=never` plus `protocol.<p>.allow=always`, and
 *   `GIT_ALLOW_PROTOCOL`, which overrides every `protocol.*` key a config sets); no redirects, so a
 *   host the clone-URL check accepted stays the host git talks to;
 * - `filter.<driver>.clean|smudge|process`, `diff.<driver>.command|textconv` and
 *   `merge.<driver>.driver`: these are keyed by a driver name the repository chooses, so no fixed
 *   `-c` reaches them. `runGit` reads the repository-local (`local` and `worktree` scope) config
 *   first and pins every driver it declares to nothing (`repoDriverOverrides`): a filter then passes
 *   content through unchanged, a diff driver fails the diff. Commands that never run a driver
 *   (`rev-parse`, `config`, `init`, `clone`, `grep` without `--textconv`, …) skip that read.
 * - submodules: `submodule.recurse=false`, `diff.ignoreSubmodules=all` and `status --ignore-submodules=all`
 *   (added unless the caller chose), so `status` and checkouts do not descend into a submodule, whose
 *   own config this runner never reads.
 *
 * - the programs a fetch or push runs for a local (file) remote: `remote.<name>.uploadpack` and
 *   `receivepack` cannot be pinned by `-c` (git refuses a second value and keeps the repository's),
 *   so every `fetch`, `pull`, `ls-remote` and `clone` gets `--upload-pack=git-upload-pack` and every
 *   `push` `--receive-pack=git-receive-pack`, which beat any config; `core.alternateRefsCommand` and
 *   `core.gitProxy` are pinned empty.
 *
 * What stays reachable: `remote.<name>.vcs` (a `git-remote-<vcs>` helper on PATH, not a command
 * line) and `http.*`;
 * a submodule's own config (only if a caller forces recursion). The operator's global config
 * (identity, CA bundle, `url.<base>.insteadOf`) is read; every key pinned here wins over it. The
 * system config is not read (`GIT_CONFIG_NOSYSTEM=1`).
 */

/** The transports every mesh git call may use. */
export const GIT_PROTOCOLS: readonly string[] = ['https', 'ssh'];

/** ssh as the mesh runs it when the operator sets no `GIT_SSH_COMMAND`: never prompts. */
export const DEFAULT_SSH_COMMAND = 'ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new';

/** Environment variables that carry clone credentials to the one-shot helper (never set by callers). */
export const CREDENTIAL_ENV = { username: 'KEELSON_GIT_USERNAME', password: 'KEELSON_GIT_PASSWORD' } as const;

/** Environment variables through which `--config-env` pins repository drivers to a value. */
export const PIN_ENV = { empty: 'KEELSON_GIT_PIN_EMPTY', false: 'KEELSON_GIT_PIN_FALSE' } as const;

export interface GitHardeningOptions {
  /**
   * Transports allowed beyond https and ssh. For tests that clone a local fixture (`['file']`);
   * nothing in the mesh passes it. @default []
   */
  allowProtocols?: readonly string[];
  /**
   * Keep the environment's locale instead of `LC_ALL=C` (messages callers parse are English under C).
   * For searches whose matching depends on it (`git grep -i` of non-ASCII text). @default false
   */
  keepLocale?: boolean;
}

/** Credentials for an https remote, handed to git by a helper that reads them from the environment. */
export interface GitCredentials {
  username: string;
  password: string;
}

/**
 * The operator's git environment that survives: identity, which global config to read, the CA
 * bundle and the ssh command. Every other `GIT_*` variable is dropped (`GIT_DIR`, `GIT_CONFIG_*`,
 * `GIT_EXEC_PATH`, `GIT_SSH`, `GIT_EXTERNAL_DIFF`, `GIT_TRACE*` — which would log credentials —,
 * `GIT_ALLOW_PROTOCOL`, `GIT_SSL_NO_VERIFY`, the pathspec switches, …).
 */
export const KEPT_GIT_ENV: ReadonlySet<string> = new Set([
  'GIT_AUTHOR_NAME',
  'GIT_AUTHOR_EMAIL',
  'GIT_AUTHOR_DATE',
  'GIT_COMMITTER_NAME',
  'GIT_COMMITTER_EMAIL',
  'GIT_COMMITTER_DATE',
  'GIT_CONFIG_GLOBAL',
  'GIT_SSL_CAINFO',
  'GIT_SSL_CAPATH',
  'GIT_SSH_COMMAND',
]);

function protocolsOf(opts: GitHardeningOptions): string[] {
  const extra = (opts.allowProtocols ?? []).filter((p) => /^[a-z][a-z0-9+.-]*$/.test(p));
  return [...new Set([...GIT_PROTOCOLS, ...extra])];
}

/** The environment a mesh git process runs with: `base` scrubbed, then the non-interactive pins. */
export function hardenedGitEnv(base: NodeJS.ProcessEnv, opts: GitHardeningOptions & { credentials?: GitCredentials } = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(base)) {
    if (typeof value !== 'string') continue;
    if (key.startsWith('GIT_') && !KEPT_GIT_ENV.has(key)) continue;
    if (key.startsWith('KEELSON_GIT_')) continue;
    env[key] = value;
  }
  Object.assign(env, {
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '',
    SSH_ASKPASS: '',
    SSH_ASKPASS_REQUIRE: 'never',
    GCM_INTERACTIVE: 'never',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_ALLOW_PROTOCOL: protocolsOf(opts).join(':'),
    GIT_SSH_COMMAND: env.GIT_SSH_COMMAND || DEFAULT_SSH_COMMAND,
    GIT_EDITOR: 'true',
    GIT_SEQUENCE_EDITOR: 'true',
    GIT_PAGER: 'cat',
    // Read-only commands (status) leave the index alone instead of refreshing it.
    GIT_OPTIONAL_LOCKS: '0',
    ...(opts.keepLocale ? {} : { LC_ALL: 'C' }),
    [PIN_ENV.empty]: '',
    [PIN_ENV.false]: 'false',
  });
  if (opts.credentials) {
    env[CREDENTIAL_ENV.username] = opts.credentials.username;
    env[CREDENTIAL_ENV.password] = opts.credentials.password;
  }
  return env;
}

/** The `-c key=value` pairs every call carries, in order (a later pair wins). */
export function pinnedConfig(opts: GitHardeningOptions & { credentials?: GitCredentials; sshCommand?: string } = {}): [string, string][] {
  const pins: [string, string][] = [
    ['core.fsmonitor', 'false'],
    ['core.hooksPath', '/dev/null'],
    ['core.sshCommand', opts.sshCommand ?? DEFAULT_SSH_COMMAND],
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
    ...protocolsOf(opts).map((p): [string, string] => [`protocol.${p}.allow`, 'always']),
  ];
  if (opts.credentials) {
    // The reset above empties the helper list; this one answers `get` from the environment only.
    pins.push([
      'credential.helper',
      `!f() { test "$1" = get || exit 0; printf 'username=%s\\npassword=%s\\n' "$${CREDENTIAL_ENV.username}" "$${CREDENTIAL_ENV.password}"; }; f`,
    ]);
  }
  return pins;
}

/** git's own options that take the next argument as their value. */
const GLOBAL_OPTIONS_WITH_VALUE = new Set(['-C', '-c', '--git-dir', '--work-tree', '--namespace', '--config-env', '--super-prefix', '--list-cmds', '--attr-source']);

/** The caller's global options (before the subcommand) and the subcommand with its arguments. */
export function splitGlobalOptions(args: readonly string[]): { global: string[]; command: string[] } {
  let i = 0;
  while (i < args.length) {
    const arg = args[i]!;
    if (!arg.startsWith('-') || arg === '--version' || arg === '--help') break;
    i += GLOBAL_OPTIONS_WITH_VALUE.has(arg) ? 2 : 1;
  }
  return { global: args.slice(0, Math.min(i, args.length)), command: args.slice(Math.min(i, args.length)) };
}

/**
 * Whether a command may run a repository's filter, diff or merge driver (and so needs the
 * repository-local drivers pinned). Conservative: anything not known to be driver-free is a yes.
 */
export function mayRunDrivers(command: readonly string[]): boolean {
  const [sub, next] = command;
  if (sub === undefined) return false;
  if (['--version', 'version', 'config', 'rev-parse', 'init', 'clone', 'ls-remote', 'var', 'symbolic-ref', 'show-ref', 'for-each-ref'].includes(sub)) {
    return false;
  }
  if (sub === 'worktree' && (next === 'list' || next === 'prune')) return false;
  if (sub === 'grep' && !command.includes('--textconv')) return false;
  return true;
}

/**
 * The program a transport command runs on the other side of a local remote, given on the command
 * line: it beats `remote.<name>.uploadpack|receivepack` from a repository's config (which `-c`
 * cannot override).
 */
const TRANSPORT_PROGRAM_OPTIONS: Readonly<Record<string, string>> = {
  fetch: '--upload-pack=git-upload-pack',
  pull: '--upload-pack=git-upload-pack',
  'ls-remote': '--upload-pack=git-upload-pack',
  clone: '--upload-pack=git-upload-pack',
  push: '--receive-pack=git-receive-pack',
};

/** The argument list git runs with: the caller's global options, then the pins, then the command. */
export function hardenedGitArgs(
  args: readonly string[],
  opts: GitHardeningOptions & { credentials?: GitCredentials; sshCommand?: string; driverPins?: readonly string[] } = {},
): string[] {
  const { global, command } = splitGlobalOptions(args);
  const pins = pinnedConfig(opts).flatMap(([key, value]) => ['-c', `${key}=${value}`]);
  // A submodule's `ignore` setting (.gitmodules, .git/config) beats diff.ignoreSubmodules; only the flag beats it.
  const [sub, ...rest] = command;
  const tail =
    sub === 'status' && !rest.some((a) => a.startsWith('--ignore-submodules'))
      ? [sub, '--ignore-submodules=all', ...rest]
      : sub !== undefined && TRANSPORT_PROGRAM_OPTIONS[sub]
        ? [sub, TRANSPORT_PROGRAM_OPTIONS[sub], ...rest]
        : command;
  return [...global, '--no-pager', ...pins, ...(opts.driverPins ?? []), ...tail];
}

/**
 * `--config-env` options pinning every filter, diff and merge driver named in `keys` (the names of
 * repository-local config keys) to nothing. `--config-env` rather than `-c`: a driver name may
 * contain `=`, which `-c` would split on.
 */
export function driverPins(keys: readonly string[]): string[] {
  const out = new Set<string>();
  for (const key of keys) {
    const first = key.indexOf('.');
    const last = key.lastIndexOf('.');
    if (first < 0 || last <= first) continue;
    const section = key.slice(0, first).toLowerCase();
    const driver = key.slice(first + 1, last);
    const pin = (variable: string, env: string) => out.add(`--config-env=${section}.${driver}.${variable}=${env}`);
    if (section === 'filter') {
      for (const variable of ['clean', 'smudge', 'process']) pin(variable, PIN_ENV.empty);
      pin('required', PIN_ENV.false);
    } else if (section === 'diff') {
      pin('command', PIN_ENV.empty);
      pin('textconv', PIN_ENV.empty);
    } else if (section === 'merge') {
      pin('driver', PIN_ENV.empty);
    }
  }
  return [...out];
}

/** Reads `git config --show-scope -z --name-only --get-regexp` output into repository-local keys. */
export function repositoryLocalKeys(output: string): string[] {
  const fields = output.split('\0');
  const keys: string[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] === 'local' || fields[i] === 'worktree') keys.push(fields[i + 1]!);
  }
  return keys;
}

/** The config keys that name a driver: what `repositoryLocalKeys` is asked for. */
export const DRIVER_KEYS_REGEXP = '^(filter|diff|merge)\\..+\\.';
