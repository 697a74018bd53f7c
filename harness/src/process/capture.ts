import { execFile } from 'node:child_process';
import { MeshError } from '@keelson/schema';

/**
 * Runs a short CLI command (a store query, an export) and returns its stdout.
 * @throws MeshError UPSTREAM_FAILED with the tail of stderr when it fails or times out.
 */
export function captureCommand(argv: string[], opts: { cwd: string; env: Record<string, string>; timeoutMs?: number }): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      argv[0]!,
      argv.slice(1),
      { cwd: opts.cwd, env: opts.env, timeout: opts.timeoutMs ?? 60_000, killSignal: 'SIGKILL', maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
      (err, stdout, stderr) => {
        if (err) {
          reject(new MeshError('UPSTREAM_FAILED', `${argv.slice(0, 3).join(' ')} failed: ${(stderr || err.message).trim().slice(-500)}`));
          return;
        }
        resolve(stdout);
      },
    );
  });
}
