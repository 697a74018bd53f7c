import { Field, ID, ObjectType } from 'type-graphql';

@ObjectType({ description: 'The closed effect a command resolves to; the surface, not the rib, performs it.' })
export class CommandEffect {
  @Field({ description: '`message` (show markdown), `open-agent` (open one of the rib\'s agents) or `run-workflow`.' })
  effect!: string;

  @Field(() => String, { nullable: true, description: 'message: the markdown to show.' })
  markdown!: string | null;

  @Field(() => ID, { nullable: true, description: 'open-agent: the rib owning the agent.' })
  ribId!: string | null;

  @Field(() => String, { nullable: true, description: 'open-agent: the agent slug.' })
  slug!: string | null;

  @Field(() => String, { nullable: true, description: 'run-workflow: the catalog workflow.' })
  workflow!: string | null;

  @Field(() => String, { nullable: true, description: 'run-workflow: the argument, as `$ARGUMENTS`.' })
  args!: string | null;
}

@ObjectType({ description: 'What invoking a command resolved to: exactly one effect, or an error to show inline.' })
export class CommandInvokeResult {
  @Field()
  ok!: boolean;

  @Field(() => CommandEffect, { nullable: true })
  effect!: CommandEffect | null;

  @Field(() => String, { nullable: true })
  error!: string | null;
}

@ObjectType({ description: 'One argument candidate for type-ahead.' })
export class CommandCompletion {
  @Field()
  value!: string;

  @Field(() => String, { nullable: true })
  description!: string | null;
}
