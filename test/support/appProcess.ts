import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');

/** One of the mesh's production entries (`apps/<name>/main.ts`) running as a child process. */
export interface AppProcess {
  name: string;
  pid: number;
  /** Its stdout and stderr so far (the last 20,000 characters). */
  output(): string;
  /** Resolves with the exit signal or code once the process is gone. */
  exited: Promise<NodeJS.Signals | number | null>;
  /** SIGKILL: no drain, no cleanup, as a crash. Resolves once it is gone. */
  kill(): Promise<void>;
  /** SIGTERM (SIGKILL after 10 s) and wait: an orderly stop. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts `apps/<app>/main.ts` with `env` and resolves once `GET healthUrl` answers 200; a process
 * that exits first, or is not healthy within `readyTimeoutMs`, fails with its output.
 */
export async function startAppProcess(app: string, env: NodeJS.ProcessEnv, healthUrl: string, readyTimeoutMs = 120_000): Promise<AppProcess> {
  const child: ChildProcess = spawn(process.execPath, ['-r', './scripts/register.js', `apps/${app}/main.ts`], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (c: Buffer) => (output = (output + c.toString()).slice(-20_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  const deadline = Date.now() + readyTimeoutMs;
  for (;;) {
    if (gone()) throw new Error(`apps/${app} exited before it was healthy:\n${output}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`apps/${app} was not healthy at ${healthUrl} within ${readyTimeoutMs} ms:\n${output}`);
    }
    if (await fetch(healthUrl, { signal: AbortSignal.timeout(2_000) }).then((r) => r.ok, () => false)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  let stopping: Promise<void> | undefined;
  return {
    name: app,
    pid: child.pid!,
    output: () => output,
    exited,
    async kill() {
      if (!gone()) child.kill('SIGKILL');
      await exited;
    },
    stop: () =>
      (stopping ??= (async () => {
        if (gone()) return;
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      })()),
  };
}
