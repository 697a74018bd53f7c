import DataLoader from 'dataloader';

/**
 * DataLoaders for one request, created on first use by name. Field and reference resolvers always
 * load through these, so a query over N entities costs a constant number of SQL statements.
 */
export class RequestLoaders {
  private readonly loaders = new Map<string, DataLoader<unknown, unknown>>();
  private readonly sets = new Map<unknown, unknown>();
  private readonly memos = new Map<string, unknown>();

  get<K, V, C = K>(name: string, batch: DataLoader.BatchLoadFn<K, V>, options?: DataLoader.Options<K, V, C>): DataLoader<K, V, C> {
    let loader = this.loaders.get(name) as DataLoader<K, V, C> | undefined;
    if (!loader) {
      loader = new DataLoader<K, V, C>(batch, options);
      this.loaders.set(name, loader as DataLoader<unknown, unknown>);
    }
    return loader;
  }

  /**
   * `make(ctx)` once per request: a subgraph's set of loaders, built on its first use instead of at
   * every field of every item a list resolves. `make` is the set's identity.
   */
  setOf<C, T>(make: (ctx: C) => T, ctx: C): T {
    if (this.sets.has(make)) return this.sets.get(make) as T;
    const set = make(ctx);
    this.sets.set(make, set);
    return set;
  }

  /**
   * `compute()` once per request per `key` (what every item of a list repeats, such as parsing the
   * same field arguments). A throw is not kept: the next call computes (and throws) again.
   */
  memo<V>(key: string, compute: () => V): V {
    if (this.memos.has(key)) return this.memos.get(key) as V;
    const value = compute();
    this.memos.set(key, value);
    return value;
  }
}

/** Orders rows to match `keys` (DataLoader's contract); missing keys map to `fallback`. */
export function byKeys<K, R, V = R | null>(
  keys: readonly K[],
  rows: readonly R[],
  keyOf: (row: R) => K,
  fallback: V = null as V,
): (R | V)[] {
  const index = new Map<K, R>();
  for (const row of rows) index.set(keyOf(row), row);
  return keys.map((k) => index.get(k) ?? fallback);
}

/** Groups rows per key for one-to-many relations, in `keys` order. */
export function groupByKeys<K, R>(keys: readonly K[], rows: readonly R[], keyOf: (row: R) => K): R[][] {
  const groups = new Map<K, R[]>();
  for (const row of rows) {
    const k = keyOf(row);
    const list = groups.get(k);
    if (list) list.push(row);
    else groups.set(k, [row]);
  }
  return keys.map((k) => groups.get(k) ?? []);
}
