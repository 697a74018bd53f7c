import { Field, InputType } from 'type-graphql';
import { z } from 'zod';

/** Seed 000 "Project creation": 1–64 chars, starts with a lowercase letter or digit, then a-z 0-9 - _. */
export const projectNameArgSchema = z
  .string()
  .min(1, 'must be 1 to 64 characters')
  .max(64, 'must be 1 to 64 characters')
  .regex(/^[a-z0-9][a-z0-9_-]*$/, 'must start with a lowercase letter or digit and contain only a-z, 0-9, - and _');

/** `{ name, rootPath? }`; unknown fields are rejected. */
export const createProjectArgsSchema = z.strictObject({
  name: projectNameArgSchema,
  rootPath: z.string().nullish(),
});

/** `{ url, name? }`; unknown fields are rejected. */
export const cloneProjectArgsSchema = z.strictObject({
  url: z.string().trim().min(1, 'is required').max(2048),
  name: projectNameArgSchema.nullish(),
});

@InputType({ description: 'Create or register a project (seed 000 "Project creation").' })
export class CreateProjectInput {
  @Field({ description: '1–64 characters: a-z 0-9 - _, starting with a letter or digit.' })
  name!: string;

  @Field(() => String, { nullable: true, description: 'Absolute (or ~) path; default <KEELSON_WORKSPACE>/<name>.' })
  rootPath?: string | null;
}

@InputType({ description: 'Clone an https or ssh repository beneath the workspace root and register it.' })
export class CloneProjectInput {
  @Field({ description: 'An https:// or ssh (ssh:// or user@host:path) repository URL.' })
  url!: string;

  @Field(() => String, { nullable: true, description: 'Defaults to a name derived from the URL.' })
  name?: string | null;
}
