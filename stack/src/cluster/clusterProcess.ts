import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';

/** A process of the cluster, in a process group of its own (so its children go with it). */
export interface ClusterProcess {
  /** e.g. `runs-1`. */
  name: string;
  pid: number;
  /** Its stdout and stderr so far (the last 20,000 characters); all of it is in `logFile`. */
  output(): string;
  /** Settles once the process is gone, with its exit code or signal. */
  exited: Promise<NodeJS.Signals | number | null>;
  /** SIGKILL to the whole group: a crash, no drain. Resolves once it is gone. */
  kill(): Promise<void>;
  /** SIGTERM to the group (SIGKILL after `graceMs`) and wait: an orderly stop. Idempotent. */
  stop(graceMs?: number): Promise<void>;
}

export interface ClusterProcessOptions {
  name: string;
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Where its output is appended. */
  logFile: string;
  /** Resolves true once the process serves (polled every 100 ms with its output so far). */
  ready: (output: string) => Promise<boolean>;
  /** @default 120 s */
  readyTimeoutMs?: number;
}

/** Every group this process started and has not seen end: SIGKILLed if this process exits first. */
const live = new Set<number>();
let exitHookInstalled = false;

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

/**
 * Starts `command` in a process group of its own, its output appended to `logFile`, and resolves
 * once `ready()` holds; a process that exits first, or is not ready in time, fails with its output.
 */
export async function startClusterProcess(opts: ClusterProcessOptions): Promise<ClusterProcess> {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // Nothing outlives the launcher, even when it ends without stopping what it started.
    process.once('exit', () => live.forEach((pid) => killGroup(pid, 'SIGKILL')));
  }
  const log = createWriteStream(opts.logFile, { flags: 'a' });
  const child = spawn(opts.command, opts.args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const pid = child.pid!;
  live.add(pid);
  let output = '';
  const keep = (c: Buffer) => {
    log.write(c);
    output = (output + c.toString()).slice(-20_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.once('exit', (code, signal) => {
      live.delete(pid);
      // The group's other members (a server's own children) go with it.
      killGroup(pid, 'SIGKILL');
      log.end();
      resolve(signal ?? code);
    }),
  );
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  let stopping: Promise<void> | undefined;
  const running: ClusterProcess = {
    name: opts.name,
    pid,
    output: () => output,
    exited,
    async kill() {
      if (!gone()) killGroup(pid, 'SIGKILL');
      await exited;
    },
    stop: (graceMs = 15_000) =>
      (stopping ??= (async () => {
        if (gone()) return;
        killGroup(pid, 'SIGTERM');
        const timer = setTimeout(() => killGroup(pid, 'SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      })()),
  };
  const deadline = Date.now() + (opts.readyTimeoutMs ?? 120_000);
  for (;;) {
    if (gone()) throw new Error(`${opts.name} exited before it was ready (log: ${opts.logFile}):\n${output.slice(-4_000)}`);
    if (Date.now() > deadline) {
      await running.kill();
      throw new Error(`${opts.name} was not ready within ${opts.readyTimeoutMs ?? 120_000} ms (log: ${opts.logFile}):\n${output.slice(-4_000)}`);
    }
    if (await opts.ready(output).catch(() => false)) return running;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Whether `GET url` answers 2xx within 2 s. */
export function answersHealthAt(url: string): Promise<boolean> {
  return fetch(url, { signal: AbortSignal.timeout(2_000) }).then(
    (res) => res.ok,
    () => false,
  );
}
