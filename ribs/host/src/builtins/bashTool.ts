import { existsSync } from 'node:fs';
import { SandboxUnavailableError, type ProcessSandbox } from '@keelson/platform';
import { z } from 'zod';
import { builtinTool } from './builtinTool';
import { confinedToolPath } from './confine';
import { runCapped } from './cappedProcess';
import { commandEnv } from './commandEnv';

/** @default a Bash call's bound */
export const BASH_DEFAULT_TIMEOUT_MS = 120_000;
/** The longest bound a call may ask for. */
export const BASH_MAX_TIMEOUT_MS = 600_000;
/** Bytes of output a call returns: the first and last halves. */
export const BASH_MAX_OUTPUT_BYTES = 30_000;

const inputSchema = z.object({
  command: z.string().min(1).max(100_000).describe('The bash command line to run in the working directory.'),
  timeout: z.number().int().min(1).max(BASH_MAX_TIMEOUT_MS).optional().describe(`Milliseconds before the command is killed. @default ${BASH_DEFAULT_TIMEOUT_MS}`),
  description: z.string().optional().describe('What the command does, in a few words (for the log).'),
});

/**
 * `Bash`: `bash -c command` in the turn's cwd (which must be inside the allowed directories), in
 * the platform's bubblewrap sandbox: the filesystem read-only except the turn's allowed directories
 * (the cwd and, in a prompt node's turn, `$ARTIFACTS_DIR`: `turnContext.artifactsDir`, itself
 * confined) with their existing `.git` and `.keelson` read-only, a private /tmp, the mesh's home
 * hidden, no network; the environment is the `sandboxEnv` allowlist of the host's. Without a usable
 * bwrap (and KEELSON_SANDBOX not `off`) the call is refused, naming the fix. It runs in its own
 * process group: a timeout or the turn's abort kills the group; so does the command's exit (nothing
 * it started in the background outlives it). Output is stdout and stderr interleaved, the first and
 * last 15,000 bytes kept. A non-zero exit, a timeout or a kill is an error result. Path-looking words
 * of the command are also checked by `builtin:path_confinement` before it runs.
 */
export function bashTool(opts: { env: Record<string, string | undefined>; sandbox: ProcessSandbox }) {
  const env = commandEnv(opts.env);
  return builtinTool({
    name: 'Bash',
    description:
      `Run a bash command in the working directory and return its output (stdout and stderr, cut to ${BASH_MAX_OUTPUT_BYTES} bytes) and exit code. ` +
      `Bounded by timeout (default ${BASH_DEFAULT_TIMEOUT_MS} ms); background processes are killed when the command ends. ` +
      'It runs sandboxed: only the allowed directories are writable (not their .git or .keelson), /tmp is private, there is no network. ' +
      'Paths named in the command must be inside the allowed directories. Prefer Read, Write, Edit, Glob and Grep for files.',
    inputSchema,
    state_changing: true,
    async run(input, ctx) {
      const cwd = confinedToolPath(ctx, ctx.cwd);
      // A prompt node's turn names its run's artifacts folder: the command can say `$ARTIFACTS_DIR` as the prompt does.
      const artifacts = ctx.turnContext?.artifactsDir;
      const artifactsDir = typeof artifacts === 'string' && artifacts ? confinedToolPath(ctx, artifacts) : undefined;
      const roots = (ctx.allowedDirectories ?? []).map((root) => confinedToolPath(ctx, root)).filter((root) => existsSync(root));
      let command;
      try {
        command = await opts.sandbox.command({
          // stderr joins stdout's pipe before the command starts (not two pipes merged on arrival), so
          // the output keeps the order the command wrote it in.
          argv: ['bash', '-c', 'exec "$@" 2>&1', 'bash', 'bash', '-c', input.command],
          cwd,
          writable: roots.length > 0 ? roots : [cwd],
          what: 'Bash',
        });
      } catch (err) {
        if (err instanceof SandboxUnavailableError) return { content: err.message, isError: true };
        throw err;
      }
      const timeoutMs = input.timeout ?? BASH_DEFAULT_TIMEOUT_MS;
      const r = await runCapped({
        argv: command.argv,
        cwd,
        env: { ...env, PWD: cwd, ...(command.sandboxed ? { TMPDIR: '/tmp' } : {}), ...(artifactsDir ? { ARTIFACTS_DIR: artifactsDir } : {}) },
        timeoutMs,
        signal: ctx.abortSignal,
        maxBytes: BASH_MAX_OUTPUT_BYTES,
        keep: 'head-and-tail',
        mergeStderr: true,
      });
      if (r.spawnError) return { content: `bash could not start: ${r.spawnError}`, isError: true };
      const output = r.output.length > 0 ? r.output.replace(/\n$/, '') : '(no output)';
      if (r.timedOut) return { content: `${output}\n[timed out after ${timeoutMs} ms; the process group was killed]`, isError: true };
      if (r.aborted) return { content: `${output}\n[aborted; the process group was killed]`, isError: true };
      if (r.exitCode !== 0) return { content: `${output}\n[${r.signal ? `killed by ${r.signal}` : `exit code ${r.exitCode}`}]`, isError: true };
      return output;
    },
  });
}
