import { z } from 'zod';

/**
 * A seed for a fresh chat: a system prompt and name (capped at the conversation limits), an
 * optional opening prompt fired as the first turn, and the agent's own model (pin `providerId`
 * with `model` when the model belongs to one provider).
 */
export const openChatSeedSchema = z.strictObject({
  systemPrompt: z.string().min(1).max(8000),
  name: z.string().min(1).max(80),
  openingPrompt: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  providerId: z.string().min(1).optional(),
});
export type OpenChatSeed = z.infer<typeof openChatSeedSchema>;

/** The cheap listing of a named chat agent; `resolveAgent(slug)` builds its seed on selection. */
export const agentSummarySchema = z.strictObject({
  slug: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[a-z0-9][a-z0-9-]*$/, 'an agent slug is lowercase letters, digits and -'),
  name: z.string().min(1).max(80),
  description: z.string().max(280).optional(),
});
export type AgentSummary = z.infer<typeof agentSummarySchema>;
