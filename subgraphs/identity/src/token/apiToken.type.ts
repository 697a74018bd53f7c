import { Directive, Field, ID, ObjectType } from 'type-graphql';

@ObjectType({ description: 'An API token as listed: never its secret.' })
@Directive('@key(fields: "id")')
export class ApiToken {
  @Field(() => ID)
  id!: string;

  @Field({ description: 'What it is for, as its creator named it.' })
  name!: string;

  @Field(() => [String], { description: 'Granted scopes (read, write, operate, admin).' })
  scopes!: string[];

  @Field(() => Date)
  createdAt!: Date;

  @Field(() => Date, { nullable: true, description: 'After this it is refused; null: never expires.' })
  expiresAt!: Date | null;

  @Field(() => Date, { nullable: true, description: 'Last accepted, to the minute.' })
  lastUsedAt!: Date | null;

  @Field(() => Date, { nullable: true })
  revokedAt!: Date | null;
}

@ObjectType({ description: 'A token just made: the secret is shown here once and stored nowhere.' })
export class CreatedApiToken {
  @Field({ description: 'The bearer secret (`kmt_…`): send it as `authorization: Bearer <token>`.' })
  token!: string;

  @Field(() => ApiToken)
  apiToken!: ApiToken;
}
