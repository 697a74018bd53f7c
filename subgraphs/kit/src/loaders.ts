import DataLoader from 'dataloader';

/**
 * DataLoaders for one request, created on first use by name. Field and reference resolvers always
 * load through these, so a query over N entities costs a constant number of SQL statements.
 */
export class RequestLoaders {
  private readonly loaders = new Map<string, DataLoader<unknown, unknown>>();

  get<K, V>(name: string, batch: DataLoader.BatchLoadFn<K, V>, options?: DataLoader.Options<K, V>): DataLoader<K, V> {
    let loader = this.loaders.get(name) as DataLoader<K, V> | undefined;
    if (!loader) {
      loader = new DataLoader<K, V>(batch, options);
      this.loaders.set(name, loader as DataLoader<unknown, unknown>);
    }
    return loader;
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
