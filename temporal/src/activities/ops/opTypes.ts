/** What an op implementation works with (the worker side of seed 000 `registerOp`'s handle). */
export interface OpContext {
  readonly opId: string;
  readonly kind: string;
  /** The input the op was started with. */
  readonly input: unknown;
  /** Aborted when the op is cancelled (or its worker shuts down): stop at the next await. */
  readonly signal: AbortSignal;
  /** A log frame (one line, cut to 4,096 characters), persisted in order. */
  log(line: string): void;
  /** A progress frame, persisted in order. */
  progress(progress: { fraction?: number; message?: string }): void;
  /**
   * Receives steering notes, in order, one at a time (a slow handler holds the next). Notes sent
   * before a handler is set wait for it. Only ops started as steerable receive any.
   */
  onSteer(handler: (note: string) => void | Promise<void>): void;
}

/** An op kind's implementation; its resolved value is the op's result (JSON, at most 256 KiB). */
export type OpImplementation = (ctx: OpContext) => Promise<unknown>;

/** Op kinds this worker can run. */
export type OpRegistry = Readonly<Record<string, OpImplementation>>;
