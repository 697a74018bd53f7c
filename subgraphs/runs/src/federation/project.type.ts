import { Directive, Field, ID, ObjectType } from 'type-graphql';

/**
 * The projects subgraph's entity as far as runs knows it: the key, plus `runs`. A reference resolves
 * without a lookup (runs needs only the id).
 */
@ObjectType({ description: 'A registered project (owned by the projects subgraph); runs adds its runs.' })
@Directive('@key(fields: "id")')
export class Project {
  @Field(() => ID)
  id!: string;
}
