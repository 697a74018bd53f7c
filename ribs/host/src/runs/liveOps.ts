import { randomUUID } from 'node:crypto';
import { MeshError } from '@keelson/schema';
import type { OpHandle, OpProgress, RegisterOpRequest } from '@keelson/ribs-contract';
import { z } from 'zod';
import { errorMessage, parseOrBadInput } from '../errors';
import type { WarningSink } from '../warnings';

/** An op a rib registered, as the durable side records it. */
export interface NewRibOp {
  id: string;
  ribId: string;
  kind: string;
  title: string;
  projectId: string | null;
  steerable: boolean;
}

/**
 * Where a rib's op becomes durable (the ribs process: the `ops` row, its frames, its `ribOp` workflow
 * held by this process). Frames are written in call order; a rejection of `start` fails the op.
 */
export interface OpsPort {
  /** Registers the op (its row and `OP_STARTED`) and starts its workflow; rejects when it cannot. */
  start(op: NewRibOp): Promise<void>;
  log(opId: string, line: string): Promise<void>;
  progress(opId: string, progress: OpProgress): Promise<void>;
}

/** How an op ended on the rib's side (the holder activity turns it into the op's terminal state). */
export type LiveOpOutcome = { status: 'succeeded'; result: unknown } | { status: 'failed'; error: string } | { status: 'stopped'; error: string };

/** One live op, as the holder activity reaches it. */
export interface LiveOp {
  readonly id: string;
  readonly ribId: string;
  readonly steerable: boolean;
  readonly outcome: Promise<LiveOpOutcome>;
  cancel(reason: string): void;
  steer(note: string): Promise<void>;
}

const requestSchema = z.object({
  kind: z.string().regex(/^[a-z][a-z0-9._:-]{0,63}$/, 'must be 1 to 64 characters: a-z, 0-9, ".", "_", ":" and "-", starting with a letter'),
  title: z.string().trim().min(1).max(200).optional(),
  projectId: z.string().min(1).max(200).optional(),
  onSteer: z.custom<RegisterOpRequest['onSteer']>((v) => v === undefined || typeof v === 'function', 'must be a function').optional(),
});

interface Entry extends LiveOp {
  /** The holder activity took it; it is dropped once the outcome settles too. */
  taken: boolean;
  settled: boolean;
  /** Settles once the registration committed or failed. */
  registered: Promise<void>;
}

/**
 * An op's frame queue: frames wait for its registration (`ready`; a rejection runs `onFailedStart`)
 * and are written in call order, none once the op settled; a failing write is warned about.
 * `registered` settles once the registration committed or failed.
 */
function frameQueue(ready: Promise<void>, onFailedStart: (err: unknown) => void, settled: () => boolean, warn: (message: string) => void) {
  let queue: Promise<void> = ready.then(() => undefined, onFailedStart);
  const registered = queue;
  const enqueue = (write: () => Promise<void> | void) => {
    queue = queue.then(async () => {
      if (settled()) return;
      try {
        await write();
      } catch (err) {
        warn(`a frame was not recorded: ${errorMessage(err)}`);
      }
    });
  };
  return { registered, enqueue };
}

/**
 * The live op registry of one process: `registerOp` hands a rib its handle at once, while the op's
 * registration commits in the background. Frames wait for it and are written in call order; `done` /
 * `error` settle after every earlier frame was written. `onSteer` and the abort controller live only
 * here, so a steer reaches the rib only while this process holds the op.
 */
export class LiveOps {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly port: () => OpsPort | undefined,
    private readonly warn: WarningSink,
  ) {}

  /** `RibContext.registerOp` for `ribId`: validates, returns the handle synchronously. */
  register(ribId: string, raw: RegisterOpRequest): OpHandle {
    const req = parseOrBadInput(requestSchema, raw, 'registerOp');
    const port = this.port();
    if (!port) throw new MeshError('SERVICE_UNAVAILABLE', 'durable ops are not available yet (the runs domain is starting); retry after readiness');
    const id = randomUUID();
    const controller = new AbortController();
    let resolveOutcome!: (outcome: LiveOpOutcome) => void;
    const outcome = new Promise<LiveOpOutcome>((resolve) => (resolveOutcome = resolve));
    let terminal = false;
    let steering: Promise<void> = Promise.resolve();
    const onSteer = req.onSteer;
    const warn = (message: string) => this.warn({ stage: 'runtime', rule: 'op', ribId, message: `op ${id} (${req.kind}): ${message}` });

    const entry: Entry = {
      id,
      ribId,
      steerable: typeof onSteer === 'function',
      outcome,
      taken: false,
      settled: false,
      registered: Promise.resolve(),
      cancel: (reason) => {
        if (!controller.signal.aborted) controller.abort(new Error(reason));
        terminal = true;
        settle({ status: 'stopped', error: reason });
      },
      steer: (note) => {
        if (!onSteer || terminal) return Promise.resolve();
        steering = steering.then(() => onSteer(note)).catch((err: unknown) => warn(`onSteer threw: ${errorMessage(err)}`));
        return steering;
      },
    };
    const settle = (o: LiveOpOutcome) => {
      if (entry.settled) return;
      entry.settled = true;
      resolveOutcome(o);
      if (entry.taken) this.entries.delete(id);
    };

    const ready = port.start({ id, ribId, kind: req.kind, title: req.title ?? req.kind, projectId: req.projectId ?? null, steerable: entry.steerable });
    const { registered, enqueue } = frameQueue(
      ready,
      (err) => {
        const message = `could not start: ${errorMessage(err)}`;
        warn(message);
        terminal = true;
        if (!controller.signal.aborted) controller.abort(new Error(message));
        settle({ status: 'failed', error: message });
        this.entries.delete(id);
      },
      () => entry.settled,
      warn,
    );
    entry.registered = registered;
    this.entries.set(id, entry);

    return {
      id,
      signal: controller.signal,
      log(line) {
        if (!terminal) enqueue(() => port.log(id, String(line)));
      },
      progress(progress) {
        if (!terminal) enqueue(() => port.progress(id, { ...(progress?.fraction !== undefined ? { fraction: Number(progress.fraction) } : {}), ...(progress?.message !== undefined ? { message: String(progress.message) } : {}) }));
      },
      done(result) {
        if (terminal) return;
        terminal = true;
        enqueue(() => settle({ status: 'succeeded', result }));
      },
      error(message) {
        if (terminal) return;
        terminal = true;
        enqueue(() => settle({ status: 'failed', error: String(message || 'the op failed') }));
      },
    };
  }

  /** The holder activity takes the op registered here (undefined once it was released or never lived here). */
  held(opId: string): LiveOp | undefined {
    const entry = this.entries.get(opId);
    if (!entry) return undefined;
    entry.taken = true;
    if (entry.settled) this.entries.delete(opId);
    return entry;
  }

  /** Ids of the ops this process holds now. */
  ids(): string[] {
    return [...this.entries.keys()];
  }

  /** Ids of live ops no holder activity has taken up yet (their workflow has not reached this process). */
  untaken(): string[] {
    return [...this.entries.values()].filter((e) => !e.taken && !e.settled).map((e) => e.id);
  }

  /** Settles once every registration in flight committed or failed. */
  async registered(): Promise<void> {
    await Promise.all([...this.entries.values()].map((e) => e.registered));
  }

  /** The process is going away: every live op's signal aborts and it settles `stopped` (FAILED, honestly). */
  stopAll(reason: string): void {
    for (const entry of [...this.entries.values()]) entry.cancel(reason);
  }
}
