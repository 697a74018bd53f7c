import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

const root = join(__dirname, '..', '..', '..', '..');

export interface MemoryProcess {
  pid: number;
  /** The GraphQL URL it serves. */
  url: string;
  /** SIGKILL: no drain, no cleanup, as a crash. */
  kill(): Promise<void>;
  /** SIGTERM and wait (an orderly stop). */
  stop(): Promise<void>;
  /** Its stdout and stderr so far (JSON log lines). */
  output(): string;
}

/**
 * Runs the production entry of the memory subgraph (`apps/memory/main.ts`) as a child
 * process with `env` on a free port, and resolves once it listens. This is the process the capture
 * crash test kills.
 */
export async function startMemoryProcess(env: NodeJS.ProcessEnv, readyTimeoutMs = 60_000): Promise<MemoryProcess> {
  const child = spawn(process.execPath, ['-r', './scripts/register.js', 'apps/memory/main.ts'], {
    cwd: root,
    env: { ...process.env, KEELSON_MEMORY_PORT: '0', KEELSON_LOG_LEVEL: 'info', KEELSON_ASSERTION_SECRET: randomBytes(32).toString('base64url'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + readyTimeoutMs;
  let url: string | undefined;
  while (!url) {
    const line = output.split('\n').find((l) => l.includes('memory listening'));
    if (line) url = (JSON.parse(line) as { url: string }).url;
    else if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the memory process exited before listening:\n${output}`);
    else if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the memory process did not listen within ${readyTimeoutMs} ms:\n${output}`);
    } else await new Promise((r) => setTimeout(r, 50));
  }
  return {
    pid: child.pid!,
    url,
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
