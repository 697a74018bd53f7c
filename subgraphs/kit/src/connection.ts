import { Directive, Field, ObjectType } from 'type-graphql';

/** Relay page info; shared by every subgraph's connections (identical and @shareable everywhere). */
@ObjectType({ description: 'Where a page ends and whether more follow.' })
@Directive('@shareable')
export class PageInfo {
  @Field()
  hasNextPage!: boolean;

  @Field(() => String, { nullable: true, description: 'Pass as `after` for the next page; null on an empty page.' })
  endCursor!: string | null;
}
