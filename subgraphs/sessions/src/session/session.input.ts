import { Field, ID, InputType } from 'type-graphql';
import { z } from 'zod';
import { isUuid } from '@keelson/schema';

@InputType({ description: "Where a new session's turns run: a project's root, or one of its live worktree leases." })
export class StartSessionInput {
  @Field(() => ID)
  projectId!: string;

  @Field(() => ID, { nullable: true, description: 'A live workspace lease of the project (acquireWorkspace) to run in instead of its root.' })
  workspaceId?: string | null;

  @Field(() => String, { nullable: true })
  title?: string | null;

  @Field(() => String, { nullable: true, description: "The model the session's turns use unless a turn names one (one of Harness.models where the CLI's config declares them)." })
  model?: string | null;

  @Field(() => String, { nullable: true, description: "The reasoning effort the session's turns use unless a turn names one (one of Harness.efforts; CAPABILITY_UNSUPPORTED where there are none)." })
  effort?: string | null;
}

/** A model or effort name: what a CLI flag takes, never an option (no leading `-`), no spaces or NUL. */
export const choiceSchema = z
  .string()
  .min(1, 'must not be empty')
  .max(200, 'must be at most 200 characters')
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$/, 'must be a model or effort name (letters, digits and . _ : / @ + -, not starting with -)');

const uuid = z.string().refine(isUuid, 'expected a UUID');

export const startSessionInputSchema = z.object(
  {
    projectId: uuid,
    workspaceId: uuid.nullish(),
    title: z.string().trim().min(1).max(200).nullish(),
    model: choiceSchema.nullish(),
    effort: choiceSchema.nullish(),
  },
  { error: 'expected { projectId, workspaceId?, title?, model?, effort? }' },
);

/** A user turn's text (also a task's prompt). */
export const turnTextSchema = z.string().min(1, 'must not be empty').max(100_000, 'must be at most 100000 characters').refine((s) => !s.includes('\u0000'), 'must not contain NUL');

export const attachmentsSchema = z.array(z.string().min(1).max(4096)).max(20, 'at most 20 attachments').nullish().transform((v) => v ?? []);

export const transcriptPageArgsSchema = z.object({
  first: z.number().int().min(0, 'must be at least 0').max(500, 'must be at most 500').nullish().transform((v) => v ?? 50),
  after: z.string().min(1).max(200).nullish().transform((v) => v ?? null),
});

export const requestIdSchema = z.string().min(1).max(200);
export const optionalUuidSchema = uuid.nullish().transform((v) => v ?? null);
