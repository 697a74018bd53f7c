import { spawn } from 'node:child_process';
import { supervisorName } from '@keelson/platform';

/**
 * Runs the command in its own process group under a small bash supervisor that also starts a
 * watchdog: when the worker process dies (even by SIGKILL) the watchdog kills the whole group within
 * about a second, so an attempt orphaned by a lost worker never finishes behind the retry's back.
 * Its `$0` names the Keelson home that owns it (see `supervisorName`). `$1` is the worker's pid, the rest is the command's argv.
 */
const SUPERVISOR = [
  'w="$1"; shift',
  '( while kill -0 "$w" 2>/dev/null; do sleep 1; done; kill -KILL 0 ) </dev/null >/dev/null 2>&1 &',
  'dog=$!',
  '"$@" </dev/null &',
  'child=$!',
  'wait "$child"; rc=$?',
  'kill "$dog" 2>/dev/null',
  'exit "$rc"',
].join('\n');

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
}

/** Keeps the last `max` bytes of a stream. */
class Tail {
  private chunks: Buffer[] = [];
  private held = 0;
  total = 0;

  constructor(private readonly max: number) {}

  push(chunk: Buffer): void {
    this.total += chunk.length;
    this.chunks.push(chunk);
    this.held += chunk.length;
    while (this.held - (this.chunks[0]?.length ?? 0) >= this.max) this.held -= this.chunks.shift()!.length;
  }

  text(): { text: string; truncated: boolean } {
    const all = Buffer.concat(this.chunks);
    const kept = all.length > this.max ? all.subarray(all.length - this.max) : all;
    return { text: kept.toString('utf8'), truncated: this.total > kept.length };
  }
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
export function runCommand(spec: CommandSpec): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', SUPERVISOR, supervisorName('node'), String(process.pid), ...spec.argv], {
      cwd: spec.cwd,
      env: spec.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const pid = child.pid;
    if (pid === undefined) {
      child.once('error', reject);
      return;
    }
    const tail = new Tail(spec.maxOutputBytes);
    child.stdout!.on('data', (c: Buffer) => tail.push(c));
    child.stderr!.on('data', (c: Buffer) => tail.push(c));
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
    const ticker = setInterval(() => spec.onTick?.({ outputBytes: tail.total, pid }), 1000);

    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    const finish = () => {
      clearTimeout(timer);
      clearTimeout(forceKill);
      clearInterval(ticker);
      spec.signal.removeEventListener('abort', onAbort);
      const { text, truncated } = tail.text();
      resolve({
        pid,
        exitCode: exit?.code ?? null,
        signal: exit?.signal ?? null,
        output: text,
        outputBytes: tail.total,
        truncated,
        timedOut,
        cancelled,
      });
    };
    child.once('error', (err) => {
      clearTimeout(timer);
      clearInterval(ticker);
      reject(err);
    });
    child.once('exit', (code, signal) => {
      exit = { code, signal };
      // Leftover background processes of the command would hold its pipes open: end them.
      killGroup(pid, 'SIGKILL');
    });
    child.once('close', finish);
  });
}
