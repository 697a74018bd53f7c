import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');

export interface WorkerProcess {
  pid: number;
  /** Resolves with the exit signal or code once the process is gone. */
  exited: Promise<NodeJS.Signals | number | null>;
  /** SIGKILL: no drain, no cleanup, as a crash. */
  kill(): Promise<void>;
  /** SIGTERM and wait (an orderly stop). */
  stop(): Promise<void>;
  /** Its stderr so far (JSON log lines). */
  output(): string;
}

/**
 * Runs the production worker entry (`apps/worker/main.ts`) as a child process with `env`,
 * and resolves once it polls. This is the process the crash tests kill.
 */
export async function startWorkerProcess(env: NodeJS.ProcessEnv, readyTimeoutMs = 60_000): Promise<WorkerProcess> {
  const child: ChildProcess = spawn(process.execPath, ['-r', './scripts/register.js', 'apps/worker/main.ts'], {
    cwd: root,
    env: { ...env, KEELSON_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
  const deadline = Date.now() + readyTimeoutMs;
  while (!output.includes('worker polling')) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the worker process exited before polling:\n${output}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the worker process did not poll within ${readyTimeoutMs} ms:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    pid: child.pid!,
    exited,
    output: () => output,
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
