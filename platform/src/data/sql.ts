import type { EntityManager } from 'typeorm';

/**
 * Rows of a statement, whatever its command: TypeORM's postgres driver answers UPDATE/DELETE with
 * `[rows, count]` and everything else with `rows`.
 */
export async function rows<T>(m: Pick<EntityManager, 'query'>, sql: string, params: unknown[] = []): Promise<T[]> {
  const result: unknown = await m.query(sql, params);
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number') {
    return result[0] as T[];
  }
  return result as T[];
}

/** Postgres text cannot hold NUL; everything else is kept. */
export function pgText(s: string): string {
  return s.includes('\u0000') ? s.replace(/\u0000/g, '\uFFFD') : s;
}

/** At most `max` characters, with an ellipsis when cut (for event payloads and one-line errors). */
export function clip(s: string, max = 500): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}
