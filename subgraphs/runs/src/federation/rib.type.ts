import { Directive, Field, ID, ObjectType } from 'type-graphql';

/** The ribs subgraph's entity as far as runs knows it: the key, plus `workflows` and `runs`. */
@ObjectType({ description: 'A rib (owned by the ribs subgraph); runs adds the workflows it contributes and its runs.' })
@Directive('@key(fields: "id")')
export class Rib {
  @Field(() => ID)
  id!: string;
}
