/** A long-running operation a rib registers on the durable op registry. */
export interface RegisterOpRequest {
  kind: string;
  title?: string;
  projectId?: string;
  /** Makes the op steerable; lives only in the live registry (a steer fails once the op is terminal). */
  onSteer?(note: string): void | Promise<void>;
}

/** Progress of an op. */
export interface OpProgress {
  /** 0 to 1. */
  fraction?: number;
  message?: string;
}

/**
 * The handle `registerOp` returns synchronously. Frames and the terminal result are persisted;
 * cancellation aborts `signal`.
 */
export interface OpHandle {
  readonly id: string;
  readonly signal: AbortSignal;
  log(line: string): void;
  progress(progress: OpProgress): void;
  done(result?: unknown): void;
  error(message: string): void;
}
