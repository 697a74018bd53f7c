import type { SnapshotComposer, SnapshotFrame, SnapshotValidator } from '@keelson/ribs-contract';
import { errorMessage } from '../errors';
import type { SnapshotRecord, SnapshotStore } from '../ports/snapshotStore';
import type { WarningSink } from '../warnings';

/** What a recompose (or a publish) did. */
export type SnapshotOutcome =
  | { status: 'published'; frame: SnapshotRecord }
  /** No composer is registered under the key. */
  | { status: 'unregistered' }
  /** The composer threw, or the store failed: nothing was published, the prior version stands. */
  | { status: 'failed'; error: string }
  /** The validator rejected the payload: it was dropped, the prior version stands. */
  | { status: 'rejected'; error: string };

interface ComposerEntry {
  ribId: string;
  compose: SnapshotComposer;
  validate?: SnapshotValidator;
}

/** The frame a rib sees (no owner, no cursor). */
export function toFrame<T>(record: SnapshotRecord): SnapshotFrame<T> {
  return { key: record.key, version: record.version, payload: record.payload as T, composedAt: record.composedAt };
}

/**
 * The host-wide snapshot registry behind every rib's scoped manager: composers and validators by
 * key, lazy composition, one in-flight compose per key, and every new version appended to the
 * `SnapshotStore`. Namespace rules live in the scoped manager; this layer trusts its callers.
 */
export class SnapshotHub {
  private readonly composers = new Map<string, ComposerEntry>();
  /** Validators of workflow-bound keys (`bindSnapshotKey`), applied to published run output. */
  private readonly boundValidators = new Map<string, SnapshotValidator>();
  private readonly inFlight = new Map<string, Promise<SnapshotOutcome>>();

  constructor(
    private readonly store: SnapshotStore,
    private readonly warn: WarningSink,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Registers a composer; throws when the key already has one. */
  register(ribId: string, key: string, compose: SnapshotComposer, validate?: SnapshotValidator): () => void {
    if (this.composers.has(key)) throw new Error(`snapshot key '${key}' already has a composer; unregister it first`);
    const entry: ComposerEntry = { ribId, compose, validate };
    this.composers.set(key, entry);
    return () => {
      if (this.composers.get(key) === entry) this.composers.delete(key);
    };
  }

  /** Binds a validator to a workflow-bound key. */
  bindValidator(key: string, validate: SnapshotValidator): void {
    this.boundValidators.set(key, validate);
  }

  /** True when the key has a composer. */
  has(key: string): boolean {
    return this.composers.has(key);
  }

  /** The rib owning a registered key. */
  ownerOf(key: string): string | undefined {
    return this.composers.get(key)?.ribId;
  }

  /** Registered keys, optionally of one rib. */
  keys(ribId?: string): string[] {
    return [...this.composers.entries()].filter(([, e]) => ribId === undefined || e.ribId === ribId).map(([key]) => key);
  }

  /** Composes, validates and appends a new version; concurrent calls for a key share one compose. */
  recompose(key: string): Promise<SnapshotOutcome> {
    const running = this.inFlight.get(key);
    if (running) return running;
    const entry = this.composers.get(key);
    if (!entry) return Promise.resolve({ status: 'unregistered' });
    const run = this.composeAndAppend(key, entry).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, run);
    return run;
  }

  /** Validates and appends a payload produced elsewhere (a bound workflow's output, a rib's publish). */
  publish(ribId: string, key: string, payload: unknown): Promise<SnapshotOutcome> {
    const validate = this.boundValidators.get(key) ?? this.composers.get(key)?.validate;
    return this.validateAndAppend(ribId, key, payload, validate);
  }

  /** The latest stored version. */
  read(key: string): Promise<SnapshotRecord | undefined> {
    return this.store.latest(key);
  }

  private async composeAndAppend(key: string, entry: ComposerEntry): Promise<SnapshotOutcome> {
    let payload: unknown;
    try {
      payload = await entry.compose();
    } catch (err) {
      const error = errorMessage(err);
      this.warn({ stage: 'runtime', rule: 'composer-failed', ribId: entry.ribId, message: `composer of '${key}' threw; keeping the prior version: ${error}` });
      return { status: 'failed', error };
    }
    return this.validateAndAppend(entry.ribId, key, payload, entry.validate ?? this.boundValidators.get(key));
  }

  private async validateAndAppend(ribId: string, key: string, payload: unknown, validate?: SnapshotValidator): Promise<SnapshotOutcome> {
    let value = payload;
    if (validate) {
      try {
        const validated = validate(payload);
        if (validated !== undefined) value = validated;
      } catch (err) {
        const error = errorMessage(err);
        this.warn({ stage: 'runtime', rule: 'snapshot-validator', ribId, message: `payload for '${key}' failed validation and was dropped; keeping the prior version: ${error}` });
        return { status: 'rejected', error };
      }
    }
    let json: unknown;
    try {
      const text = JSON.stringify(value ?? null);
      json = JSON.parse(text);
    } catch (err) {
      const error = `payload is not JSON-serializable: ${errorMessage(err)}`;
      this.warn({ stage: 'runtime', rule: 'snapshot-validator', ribId, message: `payload for '${key}' dropped: ${error}` });
      return { status: 'rejected', error };
    }
    try {
      const frame = await this.store.append({ key, ribId, payload: json, composedAt: this.now().toISOString() });
      return { status: 'published', frame };
    } catch (err) {
      const error = `snapshot store failed: ${errorMessage(err)}`;
      this.warn({ stage: 'runtime', rule: 'snapshot-store', ribId, message: `could not publish '${key}': ${error}` });
      return { status: 'failed', error };
    }
  }
}
