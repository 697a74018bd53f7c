import { JSONScalar } from '@keelson/kit';
import { Field, ID, InputType } from 'type-graphql';
import { z } from 'zod';

/** Longest message or summary text stored (Postgres caps one tsvector at 1 MB). */
export const MAX_CONTENT_CHARS = 200_000;

/** Content cut to MAX_CONTENT_CHARS with a marker saying how much was left out (capture stores what it can). */
export function clipContent(content: string): string {
  const over = content.length - MAX_CONTENT_CHARS;
  return over > 0 ? `${content.slice(0, MAX_CONTENT_CHARS - 64)}\n… [${over + 64} characters not stored]` : content;
}

export const sessionIdSchema = z.string().trim().min(1, 'must not be empty').max(512, 'must be at most 512 characters');
export const agentSchema = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters');
export const taskIdSchema = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters');
const labelSchema = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters');
const jsonObject = z.record(z.string(), z.unknown());

/** How many messages a history returns. @default 50 */
export const historyLimitSchema = z.number().int().min(1, 'must be at least 1').max(500, 'must be at most 500').nullish().transform((v) => v ?? 50);

/** `appendMemory`'s entry; unknown fields are rejected. */
export const memoryEntrySchema = z.strictObject({
  sessionId: sessionIdSchema,
  agent: agentSchema,
  role: z
    .string()
    .trim()
    .regex(/^[a-z][a-z0-9_-]{0,31}$/, 'must be a lowercase role name such as user, assistant, system or tool'),
  content: z.string().max(MAX_CONTENT_CHARS, `must be at most ${MAX_CONTENT_CHARS} characters`),
  channel: labelSchema.nullish(),
  taskId: taskIdSchema.nullish(),
  toolCalls: z.unknown().nullish(),
  metadata: jsonObject.nullish(),
  dedupeKey: z.string().min(1, 'must not be empty').max(512, 'must be at most 512 characters').nullish(),
  createdAt: z.date().nullish(),
});

/** A message to store; `dedupeKey` makes the append idempotent. */
export interface MemoryEntry {
  sessionId: string;
  agent: string;
  role: string;
  content: string;
  channel?: string | null;
  taskId?: string | null;
  toolCalls?: unknown;
  metadata?: Record<string, unknown> | null;
  /** Unique per conversation; a second append with the same key stores nothing. @default a fresh UUID */
  dedupeKey?: string | null;
  /** @default now */
  createdAt?: Date | null;
}

/** Session settings: a JSON object of at most 64 KiB. */
export const sessionSettingsSchema = jsonObject.refine((v) => JSON.stringify(v).length <= 65_536, 'must serialize to at most 65536 characters');

@InputType({ description: 'A message to store in memory. Pass `dedupeKey` (e.g. the native message id) to make the append idempotent.' })
export class MemoryEntryInput {
  @Field(() => ID, { description: 'The canonical SessionId `<harness-id>:<native-id>`.' })
  sessionId!: string;

  @Field()
  agent!: string;

  @Field({ description: 'user, assistant, system, tool, …' })
  role!: string;

  @Field()
  content!: string;

  @Field(() => String, { nullable: true })
  channel?: string | null;

  @Field(() => ID, { nullable: true, description: 'Stamped on the conversation when this append creates it.' })
  taskId?: string | null;

  @Field(() => JSONScalar, { nullable: true })
  toolCalls?: unknown;

  @Field(() => JSONScalar, { nullable: true, description: 'A JSON object.' })
  metadata?: Record<string, unknown> | null;

  @Field(() => String, { nullable: true, description: 'Unique per conversation: a repeated key returns the stored message id and stores nothing. Default: a fresh id.' })
  dedupeKey?: string | null;

  @Field(() => Date, { nullable: true, description: 'Default: now.' })
  createdAt?: Date | null;
}
