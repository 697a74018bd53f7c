import { Directive, Field, ID, ObjectType } from 'type-graphql';

/**
 * The sessions subgraph's entity, as far as memory knows it: the key, plus the fields memory adds
 * (`history`, `conversation`). References resolve without a lookup: memory needs only the id.
 */
@ObjectType({ description: 'A harness session (owned by the sessions subgraph); memory adds its history.' })
@Directive('@key(fields: "id")')
export class HarnessSession {
  @Field(() => ID, { description: 'The canonical SessionId `<harness-id>:<native-id>`.' })
  id!: string;
}
