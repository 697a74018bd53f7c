import { Directive, Field, ObjectType } from 'type-graphql';
import { z } from 'zod';

/** Relay page info; shared by every subgraph's connections (identical and @shareable everywhere). */
@ObjectType({ description: 'Where a page ends and whether more follow.' })
@Directive('@shareable')
export class PageInfo {
  @Field()
  hasNextPage!: boolean;

  @Field(() => String, { nullable: true, description: 'Pass as `after` for the next page; null on an empty page.' })
  endCursor!: string | null;
}

const cursor = z.string().regex(/^(0|[1-9][0-9]{0,14})$/, 'expected a cursor previously received from this connection');

/** `first` (default 50, at most 500) and `after` (a cursor from this connection; absent = from the start). */
export const pageArgsSchema = z.object({
  first: z.number().int().min(0, 'must be at least 0').max(500, 'must be at most 500').nullish().transform((v) => v ?? 50),
  after: cursor.nullish().transform((v) => (v == null ? null : Number(v))),
});
export type PageArgs = z.output<typeof pageArgsSchema>;

/** A page of items whose cursor is a sequence number; `rows` holds up to `first + 1` items. */
export function pageOf<T>(rows: T[], first: number, seqOf: (row: T) => string | number): { edges: { cursor: string; node: T }[]; pageInfo: PageInfo } {
  const page = rows.slice(0, first);
  const edges = page.map((node) => ({ cursor: String(seqOf(node)), node }));
  return { edges, pageInfo: { hasNextPage: rows.length > first, endCursor: edges.at(-1)?.cursor ?? null } };
}
