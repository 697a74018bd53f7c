import { z } from 'zod';
import { ribIdSchema } from './ribId';

/**
 * A slash command a rib adds to the chat composer. `name` rides `/<name>`; `argument` describes the
 * one positional argument, and `completes` means the rib serves type-ahead through `completeCommand`.
 */
export const ribCommandDescriptorSchema = z.strictObject({
  name: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[a-z][a-z0-9-]*$/, 'a command name is lowercase kebab-case'),
  description: z.string().min(1).max(280),
  argument: z.strictObject({ hint: z.string().min(1).max(64), completes: z.boolean().optional() }).optional(),
});
export type RibCommandDescriptor = z.infer<typeof ribCommandDescriptorSchema>;

/**
 * The closed effect an invoked command resolves to; the surface, not the rib, performs it: open one
 * of the rib's agents, run a workflow (the argument as `$ARGUMENTS`), or show a message.
 */
export const commandEffectSchema = z.discriminatedUnion('effect', [
  z.strictObject({ effect: z.literal('message'), markdown: z.string().min(1).max(8000) }),
  z.strictObject({ effect: z.literal('open-agent'), ribId: ribIdSchema, slug: z.string().min(1).max(64) }),
  z.strictObject({ effect: z.literal('run-workflow'), workflow: z.string().min(1), args: z.string().optional() }),
]);
export type CommandEffect = z.infer<typeof commandEffectSchema>;

/** What `invokeCommand` returns: exactly one effect, or an error the surface renders inline. */
export const commandInvokeResultSchema = z.discriminatedUnion('ok', [
  z.strictObject({ ok: z.literal(true), effect: commandEffectSchema }),
  z.strictObject({ ok: z.literal(false), error: z.string() }),
]);
export type CommandInvokeResult = z.infer<typeof commandInvokeResultSchema>;

/** One argument candidate for type-ahead. */
export const commandCompletionSchema = z.strictObject({
  value: z.string().min(1),
  description: z.string().optional(),
});
export type CommandCompletion = z.infer<typeof commandCompletionSchema>;
