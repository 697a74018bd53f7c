import { Field, ID, ObjectType } from 'type-graphql';

@ObjectType({ description: 'Who is calling, as the mesh authenticated them.' })
export class Viewer {
  @Field({ description: '`token:<name>`, the JWT subject, or `service:<name>`.' })
  subject!: string;

  @Field({ description: 'token | jwt | service' })
  kind!: string;

  @Field(() => [String], { description: 'Effective scopes (admin implies all; write and operate imply read).' })
  scopes!: string[];

  @Field(() => ID, { nullable: true, description: 'The API token used, if any.' })
  tokenId!: string | null;
}
