import { z } from 'zod';
import { MeshError } from './errors';
import { describeZodError } from './zodMessage';

/** Parses `value` with `schema`; a failure is BAD_USER_INPUT naming each field, and nothing runs. */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, root = 'input'): z.infer<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new MeshError('BAD_USER_INPUT', describeZodError(result.error, root));
  return result.data;
}

const cursor = z.string().regex(/^(0|[1-9][0-9]{0,14})$/, 'expected a cursor previously received from this connection');

/** `first` (default 50, at most 500) and `after` (a cursor from this connection; absent = from the start). */
export const pageArgsSchema = z.object({
  first: z.number().int().min(0, 'must be at least 0').max(500, 'must be at most 500').nullish().transform((v) => v ?? 50),
  after: cursor.nullish().transform((v) => (v == null ? null : Number(v))),
});
export type PageArgs = z.output<typeof pageArgsSchema>;

/** Where a page ends and whether more follow (the shape of GraphQL's `PageInfo`). */
export interface PageInfoShape {
  hasNextPage: boolean;
  endCursor: string | null;
}

/** A page of items whose cursor is a sequence number; `rows` holds up to `first + 1` items. */
export function pageOf<T>(rows: T[], first: number, seqOf: (row: T) => string | number): { edges: { cursor: string; node: T }[]; pageInfo: PageInfoShape } {
  const page = rows.slice(0, first);
  const edges = page.map((node) => ({ cursor: String(seqOf(node)), node }));
  return { edges, pageInfo: { hasNextPage: rows.length > first, endCursor: edges.at(-1)?.cursor ?? null } };
}
