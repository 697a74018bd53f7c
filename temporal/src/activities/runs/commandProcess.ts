import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { endProcessGroup, listProcesses, supervisorName } from '@keelson/platform';

/** The supervisor's exit status when a later attempt of the node had already begun (no `.exit` is written). */
export const SUPERSEDED_EXIT = 75;

/**
 * Runs the command in its own process group under a small bash supervisor that also starts a
 * watchdog: when the worker process dies (even by SIGKILL) the watchdog kills the whole group within
 * about a second, so an attempt orphaned by a lost worker never finishes behind the retry's back.
 * Its `$0` names the Keelson home that owns it (see `supervisorName`). `$1` is the worker's pid, `$2`
 * the attempt's record, the rest is the command's argv.
 *
 * The command's output goes to the attempt's record file `<record>.log` (stdout and stderr
 * interleaved as written), and once the command ended the supervisor itself writes its exit status to
 * `<record>.exit` — before the worker hears of it. A worker killed between the command's end and its
 * report leaves a finished record behind, and the retry reports that instead of acting twice.
 *
 * Before it starts the command, the supervisor looks for a later attempt's start mark (see
 * `claimAttempt`) beside its record, and exits with {@link SUPERSEDED_EXIT} without running anything
 * when there is one: an attempt Temporal gave up on while its worker was slow, not dead, may reach its
 * spawn after its retry began. Either the supervisor looked before the later attempt marked its start —
 * then its process already existed, and the later attempt's `endEarlierAttempts` finds and ends it — or after, and it
 * sees the mark. No window is left in which both act.
 */
const SUPERVISOR = [
  'w="$1"; rec="$2"; shift 2',
  'mine="${rec##*/}"',
  `for m in "\${rec%/*}"/*.start; do n="\${m##*/}"; n="\${n%.start}"; case "$n" in *[!0-9]*|"") continue;; esac; [ "$n" -gt "$mine" ] && exit ${SUPERSEDED_EXIT}; done`,
  '( while kill -0 "$w" 2>/dev/null; do sleep 1; done; kill -KILL 0 ) </dev/null >/dev/null 2>&1 &',
  'dog=$!',
  '"$@" </dev/null &',
  'child=$!',
  'wait "$child"; rc=$?',
  'printf \'%s\\n\' "$rc" >"$rec.exit.partial" && mv -f "$rec.exit.partial" "$rec.exit"',
  'kill "$dog" 2>/dev/null',
  'exit "$rc"',
].join('\n');

/**
 * Marks attempt `attempt` of a node as begun, beside its records: from then on no earlier attempt's
 * supervisor starts its command. Call it before `endEarlierAttempts`.
 */
export async function claimAttempt(records: string, attempt: number): Promise<void> {
  await mkdir(records, { recursive: true });
  await writeFile(join(records, `${attempt}.start`), '');
}

/**
 * Lets a settled node's records go — the output logs and exit statuses — but keeps the start marks,
 * so an earlier attempt still on its way to its spawn never runs the command behind the settled one.
 */
export async function settleRecords(records: string): Promise<void> {
  const names = await readdir(records).catch(() => [] as string[]);
  await Promise.all(names.filter((n) => !n.endsWith('.start')).map((n) => rm(join(records, n), { force: true, recursive: true })));
}

export interface CommandSpec {
  /** Program and arguments. */
  argv: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** The node's own timeout: the group is killed and the attempt fails. */
  timeoutMs: number;
  /** Aborting kills the group (SIGTERM, SIGKILL a second later). */
  signal: AbortSignal;
  /** Bytes of output kept: the tail. */
  maxOutputBytes: number;
  /**
   * The attempt's record: a path prefix in a directory the command cannot see. The output is written
   * to `<record>.log`, the exit status to `<record>.exit` (see `readCommandRecord`).
   */
  record: string;
  /** Called about once a second while the command runs. */
  onTick?: (progress: { outputBytes: number; pid: number }) => void;
}

export interface CommandResult {
  pid: number;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** stdout and stderr interleaved as they arrived; the last `maxOutputBytes` bytes. */
  output: string;
  outputBytes: number;
  truncated: boolean;
  timedOut: boolean;
  cancelled: boolean;
  /** A later attempt of the node had begun: the command was not started. */
  superseded: boolean;
}

/** The last `max` bytes of a record's output, and how many bytes it holds in all. */
async function outputTail(file: string, max: number): Promise<{ text: string; total: number; truncated: boolean }> {
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { text: '', total: 0, truncated: false };
    throw err;
  }
  try {
    const total = (await handle.stat()).size;
    const length = Math.min(total, max);
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, total - length);
    return { text: buffer.toString('utf8'), total, truncated: total > length };
  } finally {
    await handle.close();
  }
}

/**
 * What an attempt's record says: undefined while its command has not ended (or never started),
 * else its exit code and the tail of its output.
 */
export async function readCommandRecord(record: string, maxOutputBytes: number): Promise<{ exitCode: number; output: string; outputBytes: number; truncated: boolean } | undefined> {
  let status: string;
  try {
    status = await readFile(`${record}.exit`, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const exitCode = Number(status.trim());
  if (!Number.isInteger(exitCode)) return undefined;
  const tail = await outputTail(`${record}.log`, maxOutputBytes);
  return { exitCode, output: tail.text, outputBytes: tail.total, truncated: tail.truncated };
}

/**
 * Ends the groups of earlier attempts whose records are in `records` and that still run: an attempt
 * Temporal gave up on (its heartbeat timed out) may live on in a worker that is slow, not dead, and
 * must not act beside its retry. Found by their supervisors' command lines, never by a pid alone.
 */
export async function endEarlierAttempts(records: string, attempt: number): Promise<number> {
  const earlier = new Set(Array.from({ length: attempt - 1 }, (_, k) => join(records, String(k + 1))));
  const mark = supervisorName('node');
  const live = (await listProcesses()).filter((p) => p.pid === p.pgid && p.argv[1] === '-c' && p.argv[3] === mark && earlier.has(p.argv[5] ?? ''));
  await Promise.all(live.map((p) => endProcessGroup(p.pgid, { first: 'SIGKILL' })));
  return live.length;
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is already gone.
  }
}

/**
 * Runs one command of a run node and resolves when it ended (never rejects for the command's own
 * failure). When the command exits, whatever it left running in its group is killed too.
 */
export async function runCommand(spec: CommandSpec): Promise<CommandResult> {
  const logFile = `${spec.record}.log`;
  await mkdir(dirname(logFile), { recursive: true });
  await rm(`${spec.record}.exit`, { force: true });
  const log = openSync(logFile, 'w');
  let child;
  try {
    child = spawn('bash', ['-c', SUPERVISOR, supervisorName('node'), String(process.pid), spec.record, ...spec.argv], {
      cwd: spec.cwd,
      env: spec.env,
      detached: true,
      stdio: ['ignore', log, log],
    });
  } finally {
    closeSync(log);
  }
  const pid = child.pid;
  if (pid === undefined) return new Promise((_, reject) => child.once('error', reject));
  const ended = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; timedOut: boolean; cancelled: boolean } | Error>((resolve) => {
    let timedOut = false;
    let cancelled = false;
    let forceKill: NodeJS.Timeout | undefined;
    const stop = (why: 'timeout' | 'cancel') => {
      if (why === 'timeout') timedOut = true;
      else cancelled = true;
      killGroup(pid, 'SIGTERM');
      forceKill ??= setTimeout(() => killGroup(pid, 'SIGKILL'), 1000);
    };
    const timer = setTimeout(() => stop('timeout'), spec.timeoutMs);
    const onAbort = () => stop('cancel');
    if (spec.signal.aborted) onAbort();
    else spec.signal.addEventListener('abort', onAbort, { once: true });
    spec.onTick?.({ outputBytes: 0, pid });
    const ticker = setInterval(() => {
      stat(logFile).then((st) => spec.onTick?.({ outputBytes: st.size, pid }), () => undefined);
    }, 1000);
    const done = (result: { code: number | null; signal: NodeJS.Signals | null } | Error) => {
      clearTimeout(timer);
      clearTimeout(forceKill);
      clearInterval(ticker);
      spec.signal.removeEventListener('abort', onAbort);
      resolve(result instanceof Error ? result : { ...result, timedOut, cancelled });
    };
    child.once('error', done);
    child.once('exit', (code, signal) => {
      // Leftover background processes of the command would go on writing its record: end them.
      killGroup(pid, 'SIGKILL');
      done({ code, signal });
    });
  });
  if (ended instanceof Error) throw ended;
  const tail = await outputTail(logFile, spec.maxOutputBytes);
  return {
    pid,
    exitCode: ended.code,
    signal: ended.signal,
    output: tail.text,
    outputBytes: tail.total,
    truncated: tail.truncated,
    timedOut: ended.timedOut,
    cancelled: ended.cancelled,
    superseded: ended.code === SUPERSEDED_EXIT && !existsSync(`${spec.record}.exit`),
  };
}
