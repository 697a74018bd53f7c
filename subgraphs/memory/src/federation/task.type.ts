import { Directive, Field, ID, ObjectType } from 'type-graphql';

/** The sessions subgraph's task entity; memory adds its history. */
@ObjectType({ description: 'A harness task (owned by the sessions subgraph); memory adds its history.' })
@Directive('@key(fields: "id")')
export class Task {
  @Field(() => ID)
  id!: string;
}
