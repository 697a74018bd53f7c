import { resolve } from 'node:path';
import { AdminError, adminBootstrap, adminMagicLink } from './admin';
import { versionAtLeast } from './api';
import { StandinStore } from './store';
import { startStandin, STANDIN_VERSION } from './server';

/**
 * The emulated release (tests set it to exercise the version differences SWARM.md records: no
 * `--access-log` before 0.5.0, SIGTERM not draining before 0.4.0). Deliberately not a `CLICKCLACK_*`
 * variable: the managed server strips those from its child.
 */
export const STANDIN_VERSION_ENV = 'KEELSON_CLICKCLACK_STANDIN_VERSION';

interface ServeFlag {
  name: string;
  env?: string;
  boolean?: boolean;
  usage: string;
  /** The release that introduced it. */
  since?: string;
  /** Accepted but not provided by the stand-in (the process exits 2 saying so). */
  unsupported?: boolean;
}

const SERVE_FLAGS: ServeFlag[] = [
  { name: 'addr', env: 'CLICKCLACK_ADDR', usage: 'listen address (default ":8080")' },
  { name: 'data', env: 'CLICKCLACK_DATA', usage: 'data directory (default "./data")' },
  { name: 'db', env: 'CLICKCLACK_DB', usage: 'database URL (default "sqlite://<data>/clickclack.db")', unsupported: true },
  { name: 'uploads', env: 'CLICKCLACK_UPLOADS', usage: 'uploads URL (default "file://<data>/uploads")', unsupported: true },
  { name: 'config', usage: 'JSON config file', unsupported: true },
  { name: 'dev-bootstrap', env: 'CLICKCLACK_DEV_BOOTSTRAP', boolean: true, usage: 'create a local owner and trust loopback requests (default false)' },
  { name: 'metrics-enabled', boolean: true, usage: 'serve metrics (default false)' },
  { name: 'environment', usage: 'environment name' },
  { name: 'embed-frame-ancestors', usage: 'allowed frame ancestors' },
  { name: 'access-team-domain', usage: 'Cloudflare Access team domain' },
  { name: 'access-aud', usage: 'Cloudflare Access audience' },
  { name: 'access-log', env: 'CLICKCLACK_ACCESS_LOG', usage: 'access log: all|errors|off (default "all")', since: '0.5.0' },
];

function out(text: string): void {
  process.stdout.write(`${text}\n`);
}

function fail(text: string, code = 2): never {
  process.stderr.write(`${text}\n`);
  process.exit(code);
}

function serveUsage(version: string): string {
  const flags = SERVE_FLAGS.filter((f) => !f.since || versionAtLeast(version, f.since));
  return ['Usage of serve:', ...flags.map((f) => `  --${f.name}${f.boolean ? '' : ' string'}\n    \t${f.usage}`)].join('\n');
}

const USAGE = [
  'clickclack (keelson stand-in: ClickClack\'s wire protocol as SWARM.md records it, for tests)',
  '',
  'Usage:',
  '  clickclack [serve] [flags]   run the server (the default)',
  '  clickclack version           print the version',
  '  clickclack admin bootstrap -data <dir> -email <e> -name <n>   create the owner, print its id',
  '  clickclack admin magic-link create -data <dir> -email <e>      print a sign-in token (mgt_…)',
  '',
  'Run `clickclack serve -h` for the serve flags.',
].join('\n');

/** Parses Go-style flags (`-f`, `--f`, `--f=v`, `--f v`; booleans take `=true|false` only). */
function parseServe(args: string[], version: string): Map<string, string> {
  const known = new Map(SERVE_FLAGS.filter((f) => !f.since || versionAtLeast(version, f.since)).map((f) => [f.name, f]));
  const values = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '-h' || arg === '--help' || arg === '-help') {
      out(serveUsage(version));
      process.exit(0);
    }
    const m = /^--?([^=]+)(?:=(.*))?$/.exec(arg);
    if (!m) fail(`unexpected argument: ${arg}\n${serveUsage(version)}`);
    const flag = known.get(m[1]!);
    if (!flag) fail(`flag provided but not defined: -${m[1]}\n${serveUsage(version)}`);
    let value = m[2];
    if (value === undefined) {
      if (flag.boolean) value = 'true';
      else {
        value = args[++i];
        if (value === undefined) fail(`flag needs an argument: -${flag.name}`);
      }
    }
    if (flag.unsupported) fail(`--${flag.name} is not provided by the keelson stand-in`);
    values.set(flag.name, value);
  }
  return values;
}

const truthy = (v: string | undefined) => v === 'true' || v === '1' || v === 't' || v === 'TRUE' || v === 'True';

/** `clickclack [serve|version|-h] …` */
export function main(argv: string[]): void {
  const version = process.env[STANDIN_VERSION_ENV] || STANDIN_VERSION;
  const [command, ...rest] = argv;
  if (command === 'version') {
    out(`${version} (keelson stand-in)`);
    return;
  }
  if (command === '-h' || command === '--help' || command === 'help') {
    out(USAGE);
    return;
  }
  if (command === 'admin') {
    admin(rest);
    return;
  }
  if (command !== undefined && command !== 'serve' && !command.startsWith('-')) {
    fail(`clickclack ${command}: not provided by the keelson stand-in (it serves the HTTP and WebSocket API and the admin bootstrap and magic-link commands only)`);
  }
  const flags = parseServe(command === 'serve' ? rest : argv, version);
  const pick = (name: string, fallback: string) => {
    const flag = SERVE_FLAGS.find((f) => f.name === name)!;
    return flags.get(name) ?? (flag.env ? process.env[flag.env] : undefined) ?? fallback;
  };
  const accessLog = pick('access-log', 'all');
  if (!['all', 'errors', 'off'].includes(accessLog)) fail(`invalid value "${accessLog}" for flag -access-log`);
  void serve({
    addr: pick('addr', ':8080'),
    dataDir: resolve(pick('data', './data')),
    devBootstrap: truthy(pick('dev-bootstrap', 'false')),
    accessLog: accessLog as 'all' | 'errors' | 'off',
    version,
  });
}

async function serve(opts: { addr: string; dataDir: string; devBootstrap: boolean; accessLog: 'all' | 'errors' | 'off'; version: string }): Promise<void> {
  let server: Awaited<ReturnType<typeof startStandin>>;
  try {
    server = await startStandin(opts);
  } catch (err) {
    fail(`clickclack: ${(err as Error).message}`, 1);
  }
  const drain = (signal: string) => {
    process.stderr.write(`level=INFO msg="shutting down" signal=${signal}\n`);
    server.stop(5000).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', () => drain('interrupt'));
  // Before 0.4.0 only SIGINT drains; SIGTERM keeps its default action (the process dies at once).
  if (versionAtLeast(opts.version, '0.4.0')) process.once('SIGTERM', () => drain('terminated'));
}

/** Go-style `-name value` / `--name=value` flags of an admin command; only `allowed` are accepted. */
function parseAdminFlags(args: string[], allowed: string[]): Map<string, string> {
  const values = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const m = /^--?([^=]+)(?:=(.*))?$/.exec(args[i]!);
    if (!m || !allowed.includes(m[1]!)) fail(`flag provided but not defined: ${args[i]}\nflags: ${allowed.map((f) => `-${f}`).join(' ')}`);
    const value = m[2] ?? args[++i];
    if (value === undefined) fail(`flag needs an argument: -${m[1]}`);
    values.set(m[1]!, value);
  }
  if (values.has('db')) fail('-db is not provided by the keelson stand-in (it keeps its data in -data)');
  return values;
}

/** `clickclack admin bootstrap …` and `clickclack admin magic-link create …`, writing the data directory directly. */
function admin(args: string[]): void {
  const [sub, ...rest] = args;
  const action = sub === 'magic-link' ? rest.shift() : undefined;
  if (sub !== 'bootstrap' && !(sub === 'magic-link' && action === 'create')) {
    fail(`clickclack admin ${args.join(' ')}: the keelson stand-in provides only \`admin bootstrap\` and \`admin magic-link create\``);
  }
  const flags = parseAdminFlags(rest, sub === 'bootstrap' ? ['data', 'db', 'email', 'name'] : ['data', 'db', 'email']);
  const store = new StandinStore(resolve(flags.get('data') ?? process.env.CLICKCLACK_DATA ?? './data'));
  try {
    if (sub === 'bootstrap') {
      const user = adminBootstrap(store, { email: flags.get('email'), name: flags.get('name') });
      out(`owner ${user.display_name} <${user.email}>: ${user.id}`);
    } else {
      out(adminMagicLink(store, { email: flags.get('email') }));
    }
  } catch (err) {
    if (err instanceof AdminError) fail(`clickclack admin: ${err.message}`, 1);
    throw err;
  }
}
