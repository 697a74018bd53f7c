/** What the Postgres writers need: a `query` (a TypeORM DataSource or EntityManager, or a pg Pool). */
export interface Queryable {
  query(sql: string, params?: unknown[]): Promise<unknown>;
}

/** The rows of a query result, whichever client answered (pg's `{ rows }`, TypeORM's array). */
export function resultRows<T>(result: unknown): T[] {
  if (Array.isArray(result)) return (result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number' ? result[0] : result) as T[];
  const rows = (result as { rows?: unknown } | null)?.rows;
  return Array.isArray(rows) ? (rows as T[]) : [];
}
