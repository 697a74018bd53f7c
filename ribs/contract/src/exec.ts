/** The outcome of one process run: never a throw. */
export type RibExecResult<T> =
  | { ok: true; data: T; exitCode: number | null }
  | { ok: false; error: string; code: number | null; stderr?: string };

/** Options of one process run. */
export interface RibExecOptions {
  /** Kill the process after this long. @default 30000 */
  timeoutMs?: number;
  /** Added to the host's environment. */
  env?: Record<string, string>;
  cwd?: string;
  /** Treat a non-zero exit as success (the output is still returned). @default false */
  acceptNonZeroExit?: boolean;
  /** Aborting kills the process and resolves `{ ok: false, error: 'aborted' }`. */
  signal?: AbortSignal;
  /** Written to the process's stdin, which is then closed. */
  input?: string;
}

/** Process execution for ribs: arguments are passed without a shell. */
export interface RibExec {
  /** Runs `cmd args` and parses its stdout as JSON. */
  runJSON<T = unknown>(cmd: string, args: readonly string[], opts?: RibExecOptions): Promise<RibExecResult<T>>;
  /** Runs `cmd args` and returns its stdout as text. */
  runText(cmd: string, args: readonly string[], opts?: RibExecOptions): Promise<RibExecResult<string>>;
}
