/** Produces a key's payload on demand; sync or async. */
export type SnapshotComposer<T = unknown> = () => Promise<T> | T;

/**
 * A producer-side, fail-closed gate (typically a zod `.parse`): it throws on an invalid payload,
 * which is then dropped and the prior value kept. A returned value other than `undefined` replaces
 * the payload (so `.parse` output, with defaults applied, is what is stored).
 */
export type SnapshotValidator<T = unknown> = (data: unknown) => T;

/** Options of `SnapshotManager.register`. */
export interface SnapshotRegisterOptions<T = unknown> {
  validate?: SnapshotValidator<T>;
}

/** One published version of a key. `version` increases by one per publication. */
export interface SnapshotFrame<T = unknown> {
  key: string;
  version: number;
  payload: T;
  /** ISO-8601. */
  composedAt: string;
}

/**
 * A rib's view of the snapshot substrate, scoped to its namespace (`rib:<id>` / `rib:<id>:*`):
 * registering or publishing outside it throws, reading outside it returns nothing. The bare rib id
 * names the root key `rib:<id>`, where `composeBundle` is registered (`recompose(rib.id)`).
 * Composers are lazy: nothing composes until something calls `recompose`.
 */
export interface SnapshotManager {
  /** Registers a composer under a key; throws for a key outside the namespace or already registered. */
  register<T>(key: string, compose: SnapshotComposer<T>, opts?: SnapshotRegisterOptions<T>): () => void;
  /**
   * Composes the key, validates, persists and publishes a new version. Resolves undefined when the
   * key has no composer, the composer threw or the validator rejected (the prior version stays).
   */
  recompose<T = unknown>(key: string): Promise<SnapshotFrame<T> | undefined>;
  /** Publishes a payload under the key through its validator; rejects for a key outside the namespace. */
  publish<T = unknown>(key: string, payload: T): Promise<SnapshotFrame<T> | undefined>;
  /** The latest version of the key, or undefined (always for another rib's key). */
  read<T = unknown>(key: string): Promise<SnapshotFrame<T> | undefined>;
  /** The keys this rib has registered composers for. */
  keys(): string[];
}
