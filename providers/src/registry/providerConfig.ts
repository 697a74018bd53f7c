import { describeZodError } from '@keelson/schema';
import { z } from 'zod';

const classMapSchema = z.strictObject({ fast: z.string().min(1).optional(), balanced: z.string().min(1).optional(), deep: z.string().min(1).optional() });

/** Provider ids: what `req.provider`, `modelClasses` keys and session ids use. */
export const providerIdSchema = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'a provider id is 1 to 64 characters: a-z, 0-9, _ and -');

/** One entry of the config file's `providers`. */
export const providerConfigSchema = z.strictObject({
  /** The wire protocol. @default `anthropic` for the id `anthropic`, else `openai-compatible` */
  type: z.enum(['anthropic', 'openai-compatible']).optional(),
  displayName: z.string().min(1).optional(),
  /** Anthropic: the API host (`/v1/messages` is appended); OpenAI-compatible: the API root ending in `/v1`. */
  baseUrl: z.string().url().optional(),
  /** The environment variable holding the API key (keys never live in the file). */
  apiKeyEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name').optional(),
  defaultModel: z.string().min(1).optional(),
  /** The provider's own class map (the top-level `modelClasses` still wins over it). */
  modelClasses: classMapSchema.optional(),
  /** Output token cap of one model call. */
  maxTokens: z.number().int().positive().optional(),
  /** Whether the endpoint accepts a reasoning-effort hint. */
  reasoningEffort: z.boolean().optional(),
  /** `false` unregisters it. */
  enabled: z.boolean().optional(),
});
export type ProviderConfig = z.infer<typeof providerConfigSchema>;

/**
 * The config file's `providers` map, each entry validated on its own: a malformed one is skipped
 * with a warning naming the field, the rest still register.
 */
export function parseProviderEntries(raw: unknown, warn: (message: string) => void): Record<string, ProviderConfig> {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    warn('providers: skipped: expected a map of provider id → settings');
    return {};
  }
  const out: Record<string, ProviderConfig> = {};
  for (const [id, entry] of Object.entries(raw)) {
    const name = providerIdSchema.safeParse(id);
    if (!name.success) {
      warn(`providers.${id}: skipped: ${name.error.issues[0]?.message}`);
      continue;
    }
    const parsed = providerConfigSchema.safeParse(entry ?? {});
    if (!parsed.success) {
      warn(`providers.${id}: skipped: ${describeZodError(parsed.error, `providers.${id}`)}`);
      continue;
    }
    out[id] = parsed.data;
  }
  return out;
}
