import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { Connection } from '@temporalio/client';
import { endProcessGroup, findExecutable, findOwnedProcesses, isExecutable, type ProcessInfo } from '@keelson/platform';
import { searchAttributes } from '@keelson/schema';
import { freePort, portIsFree } from '@keelson/service';

/** The CLI release that embeds the dev server (server 1.29.1, UI 2.42.1); later tags refuse `go install pkg@version`. */
export const TEMPORAL_CLI_VERSION = 'v1.5.1';
const CLI_MODULE = `github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`;

/** Receives one line of human-readable progress or server output at a time. */
export type LogLine = (line: string) => void;

export interface TemporalCliOptions {
  /** The mesh's state folder (`KEELSON_HOME`); a CLI we build lands in `<home>/bin`. @default ~/.keelson */
  home?: string;
  /** The search path for an installed `temporal`. @default process.env.PATH */
  searchPath?: string;
}

function binDir(home: string | undefined): string {
  return join(home ?? join(homedir(), '.keelson'), 'bin');
}

/** The `temporal` CLI on the search path, else `<home>/bin/temporal`, else `undefined`. */
export async function findTemporalCli(options: TemporalCliOptions = {}): Promise<string | undefined> {
  const { home, searchPath = process.env.PATH ?? '' } = options;
  return findExecutable('temporal', searchPath, [binDir(home)]);
}

/**
 * The `temporal` CLI, built once into `<home>/bin` with `go install` when it is nowhere to be found.
 * The build takes about four minutes; every output line of `go` goes to `log`.
 * @throws when `go` is not installed or the build fails, saying what to do instead.
 */
export async function ensureTemporalCli(options: TemporalCliOptions & { log?: LogLine } = {}): Promise<string> {
  const { home, searchPath, log = () => {} } = options;
  const found = await findTemporalCli({ home, searchPath });
  if (found) return found;

  const gobin = binDir(home);
  await mkdir(gobin, { recursive: true });
  log(`Temporal CLI not found; building ${CLI_MODULE} into ${gobin} (takes about 4 minutes, once)`);
  const tail: string[] = [];
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn('go', ['install', '-v', CLI_MODULE], {
      env: { ...process.env, GOBIN: gobin },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const onLine = (line: string) => {
      tail.push(line);
      if (tail.length > 30) tail.shift();
      log(line);
    };
    forwardLines(child.stdout, onLine);
    forwardLines(child.stderr, onLine);
    child.once('error', (error: NodeJS.ErrnoException) => {
      reject(
        error.code === 'ENOENT'
          ? new Error(
              `Cannot build the Temporal CLI: the Go toolchain ("go") is not on PATH. Install Go 1.25 or later ` +
                `(https://go.dev/dl), or put a prebuilt \`temporal\` ${TEMPORAL_CLI_VERSION} on PATH or at ${join(gobin, 'temporal')}.`,
            )
          : error,
      );
    });
    child.once('close', resolve);
  });
  const built = join(gobin, 'temporal');
  if (code !== 0 || !(await isExecutable(built))) {
    throw new Error(`\`go install ${CLI_MODULE}\` failed (exit ${code}); last output:\n${tail.join('\n')}`);
  }
  log(`Temporal CLI built: ${built}`);
  return built;
}

export interface DevServerOptions {
  /** Path of the `temporal` CLI (see {@link ensureTemporalCli}). */
  cli: string;
  /** Address the gRPC frontend and the UI bind. @default 127.0.0.1 */
  ip?: string;
  /** gRPC frontend port; 0 picks a free one. @default 7233 */
  port?: number;
  /** Web UI port; 0 picks a free one. @default 8233 */
  uiPort?: number;
  /**
   * SQLite file that keeps workflows across restarts; without it the server is in-memory. With it,
   * the server is this file's owner: a server a crashed process left running on it is found by its
   * command line (never by a pid alone) and adopted when it answers where asked, else ended — so it
   * never holds the port against a new start. Its output then goes to `server.log` beside the file
   * (a pipe would break with the process that read it, and take the server down on its next line).
   */
  dbFilename?: string;
  /** Namespace to serve (created when missing). @default default */
  namespace?: string;
  /** Receives the server's own output lines. @default discard */
  log?: LogLine;
  /** How long to wait for the frontend to answer. @default 30000 */
  readyTimeoutMs?: number;
  /** How long `stop()` waits after SIGTERM before SIGKILL. @default 10000 */
  stopGraceMs?: number;
  /**
   * Kill the server at once when this process gets SIGINT/SIGTERM/SIGHUP. Turn it off when the caller
   * handles those signals itself and stops the server last (an orderly shutdown needs it running
   * while the worker drains). The server is killed on process exit either way. @default true
   */
  killOnSignals?: boolean;
}

export interface DevServer {
  /** `host:port` of the gRPC frontend. */
  address: string;
  /** What became of a server an earlier start left on the same state file: adopted, ended, or none. */
  previous: { outcome: 'adopted' | 'ended'; pid: number } | null;
  /** Base URL of the Web UI, e.g. `http://127.0.0.1:8233`. */
  uiUrl: string;
  namespace: string;
  /** SIGTERM to the server's process group, SIGKILL after the grace; resolves once it exited. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts `temporal server start-dev` with every mesh search attribute registered, in its own process
 * group, and resolves once the namespace answers.
 * @throws after `readyTimeoutMs`, or when the server exits first, with the tail of its output.
 */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const { cli, ip = '127.0.0.1', dbFilename, namespace = 'default', log = () => {} } = options;
  const readyTimeoutMs = options.readyTimeoutMs ?? 30_000;
  const stopGraceMs = options.stopGraceMs ?? 10_000;
  let previous: DevServer['previous'] = null;
  if (dbFilename) {
    const left = await leftBehind(dbFilename, ip, options.port, options.uiPort, namespace);
    if (left?.adopt) {
      log(`adopted the dev server pid ${left.process.pid} left running on ${dbFilename}`);
      return adopted(left.process, left.address, left.uiUrl, namespace, stopGraceMs);
    }
    if (left) {
      log(`ending the dev server pid ${left.process.pid} left on ${dbFilename} (${left.why})`);
      await endProcessGroup(left.process.pgid, { graceMs: stopGraceMs });
      previous = { outcome: 'ended', pid: left.process.pid };
    }
  }
  const { port, uiPort } = await devServerPorts(ip, options.port, options.uiPort);
  const args = devServerArgs(ip, port, uiPort, dbFilename, namespace);
  const spawned = spawnDevServer(cli, args, dbFilename, log);
  const { child } = spawned;

  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const spawnFailed = new Promise<never>((_, reject) => child.once('error', reject));
  spawnFailed.catch(() => {});
  const releaseOnDeath = killWhenParentDies(child, options.killOnSignals ?? true);
  const stop = stopOnce(child, exited, releaseOnDeath, stopGraceMs);

  const address = `${ip}:${port}`;
  const giveUp = new AbortController();
  try {
    await Promise.race([
      waitUntilServing(address, namespace, readyTimeoutMs, giveUp.signal),
      spawnFailed,
      exited.then(() => {
        throw new Error(`exited with code ${child.exitCode ?? child.signalCode} before serving`);
      }),
    ]);
  } catch (error) {
    giveUp.abort();
    await stop();
    throw await notReadyError(cli, args, address, error as Error, spawned);
  }
  return { address, uiUrl: `http://${ip}:${uiPort}`, namespace, previous, stop };
}

/** The gRPC and UI ports to start on (0 picks a free one), each checked free. */
async function devServerPorts(ip: string, askedPort: number | undefined, askedUiPort: number | undefined): Promise<{ port: number; uiPort: number }> {
  const port = askedPort === 0 ? await freePort(ip) : (askedPort ?? 7233);
  const uiPort = askedUiPort === 0 ? await freePort(ip) : (askedUiPort ?? 8233);
  // Readiness is judged by a namespace answering on the port, so another server already there would pass for ours.
  for (const [flag, taken] of [['port', port], ['uiPort', uiPort]] as const) {
    if (!(await portIsFree(taken, ip))) {
      throw new Error(`Cannot start the Temporal dev server: ${flag} ${ip}:${taken} is already in use (pass 0 to pick a free port).`);
    }
  }
  return { port, uiPort };
}

/** The `temporal server start-dev` arguments: where it listens, its state file, its namespace, every mesh search attribute. */
function devServerArgs(ip: string, port: number, uiPort: number, dbFilename: string | undefined, namespace: string): string[] {
  const args = ['server', 'start-dev', '--ip', ip, '--port', String(port), '--ui-port', String(uiPort), '--log-level', 'warn'];
  if (dbFilename) args.push('--db-filename', dbFilename);
  if (namespace !== 'default') args.push('--namespace', namespace);
  for (const name of Object.values(searchAttributes)) args.push('--search-attribute', `${name}=Keyword`);
  return args;
}

/** A spawned dev server and where its output goes: `server.log` beside the state file, else piped to `log` (its tail kept). */
interface SpawnedDevServer {
  child: ChildProcess;
  /** The last lines of piped output. */
  tail: string[];
  logFile: string | undefined;
  /** Whether the output went to `logFile` (the descriptor itself is closed once the child has it). */
  logFd: number | undefined;
}

/** Spawns the server in its own process group, its output appended to `server.log` beside the state file, else piped. */
function spawnDevServer(cli: string, args: string[], dbFilename: string | undefined, log: LogLine): SpawnedDevServer {
  const tail: string[] = [];
  const logFile = dbFilename ? join(dirname(dbFilename), 'server.log') : undefined;
  let child: ChildProcess;
  // A missing folder is the server's to report (it names the database file); then output is piped.
  const logFd = logFile ? openLog(logFile) : undefined;
  if (logFd !== undefined) {
    try {
      child = spawn(cli, args, { detached: true, stdio: ['ignore', logFd, logFd] });
    } finally {
      closeSync(logFd);
    }
  } else {
    child = spawn(cli, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const onLine = (line: string) => {
      tail.push(line);
      if (tail.length > 40) tail.shift();
      log(line);
    };
    forwardLines(child.stdout, onLine);
    forwardLines(child.stderr, onLine);
  }
  return { child, tail, logFile, logFd };
}

/** The server's `stop()`: SIGTERM to its group, SIGKILL after the grace, resolved once it exited; once only. */
function stopOnce(child: ChildProcess, exited: Promise<void>, releaseOnDeath: () => void, stopGraceMs: number): () => Promise<void> {
  let stopping: Promise<void> | undefined;
  return () => {
    stopping ??= (async () => {
      releaseOnDeath();
      // No pid: the spawn itself failed and no 'exit' will ever come.
      if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
      killGroup(child, 'SIGTERM');
      const timer = setTimeout(() => killGroup(child, 'SIGKILL'), stopGraceMs);
      await exited;
      clearTimeout(timer);
    })();
    return stopping;
  };
}

/** Why the server did not become ready, with the tail of its output (from `server.log` or the pipe). */
async function notReadyError(cli: string, args: string[], address: string, error: Error, spawned: SpawnedDevServer): Promise<Error> {
  const { tail, logFile, logFd } = spawned;
  const output = logFd !== undefined ? (await readFile(logFile!, 'utf8').catch(() => '')).split('\n').slice(-40).join('\n') : tail.join('\n');
  return new Error(
    `Temporal dev server (${cli} ${args.join(' ')}) did not become ready at ${address}: ${error.message}\n` +
      `Last server output${logFd !== undefined ? ` (${logFile})` : ''}:\n${output || '(none)'}`,
  );
}

/** A descriptor appending to `file`, or undefined when its folder does not exist. */
function openLog(file: string): number | undefined {
  try {
    return openSync(file, 'a');
  } catch {
    return undefined;
  }
}

/** The value after `flag` in an argv. */
function flagValue(argv: readonly string[], flag: string): string | undefined {
  const at = argv.indexOf(flag);
  return at >= 0 ? argv[at + 1] : undefined;
}

/**
 * A dev server some earlier start left running on `dbFilename`: to adopt when it serves the
 * namespace where this start would put it (same ip, and the requested ports unless 0 = any), else
 * to end. Undefined when there is none.
 */
async function leftBehind(
  dbFilename: string,
  ip: string,
  port: number | undefined,
  uiPort: number | undefined,
  namespace: string,
): Promise<{ process: ProcessInfo; adopt: boolean; why: string; address: string; uiUrl: string } | undefined> {
  const [found] = await findOwnedProcesses([['server', 'start-dev'], ['--db-filename', dbFilename]]);
  if (!found) return undefined;
  const theirIp = flagValue(found.argv, '--ip') ?? '127.0.0.1';
  const theirPort = Number(flagValue(found.argv, '--port') ?? 7233);
  const theirUi = Number(flagValue(found.argv, '--ui-port') ?? 8233);
  const address = `${theirIp}:${theirPort}`;
  const uiUrl = `http://${theirIp}:${theirUi}`;
  const wanted = (asked: number | undefined, fallback: number, theirs: number) => asked === 0 || (asked ?? fallback) === theirs;
  if (theirIp !== ip || !wanted(port, 7233, theirPort) || !wanted(uiPort, 8233, theirUi)) {
    return { process: found, adopt: false, why: `it serves ${address}, not where this start asks`, address, uiUrl };
  }
  const serving = await waitUntilServing(address, namespace, 5_000, new AbortController().signal).then(() => true, () => false);
  return { process: found, adopt: serving, why: serving ? 'serving' : 'it does not answer', address, uiUrl };
}

/** A server this start did not spawn but now owns: stopping it ends its process group. */
function adopted(found: ProcessInfo, address: string, uiUrl: string, namespace: string, stopGraceMs: number): DevServer {
  let stopping: Promise<void> | undefined;
  return {
    address,
    uiUrl,
    namespace,
    previous: { outcome: 'adopted', pid: found.pid },
    stop: () => (stopping ??= endProcessGroup(found.pgid, { graceMs: stopGraceMs })),
  };
}

async function waitUntilServing(address: string, namespace: string, timeoutMs: number, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline && !signal.aborted) {
    let connection: Connection | undefined;
    try {
      connection = await Connection.connect({ address, connectTimeout: 1_000 });
      await connection.workflowService.describeNamespace({ namespace });
      return;
    } catch (error) {
      lastError = error;
      await new Promise((resolve) => setTimeout(resolve, 150));
    } finally {
      await connection?.close();
    }
  }
  throw new Error(`timed out after ${timeoutMs} ms (last error: ${(lastError as Error | undefined)?.message ?? 'none'})`);
}

const deathSignals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * The server runs in its own process group, so nothing takes it down with us: kill it when this process
 * exits or is signalled. A signal we caught is re-raised once no one else listens, keeping its default
 * effect. Returns the function that removes these hooks.
 */
function killWhenParentDies(child: ChildProcess, onSignals: boolean): () => void {
  const onExit = () => killGroup(child, 'SIGKILL');
  const onSignal = (signal: NodeJS.Signals) => {
    release();
    killGroup(child, 'SIGKILL');
    if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
  };
  const release = () => {
    process.removeListener('exit', onExit);
    for (const signal of deathSignals) process.removeListener(signal, onSignal);
  };
  process.once('exit', onExit);
  if (onSignals) for (const signal of deathSignals) process.once(signal, onSignal);
  return release;
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // The group is already gone.
  }
}

function forwardLines(stream: NodeJS.ReadableStream | null, onLine: LogLine): void {
  if (!stream) return;
  let buffered = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buffered += chunk;
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) if (line.trim()) onLine(line.trimEnd());
  });
  stream.on('end', () => {
    if (buffered.trim()) onLine(buffered.trimEnd());
  });
}
