import { z } from 'zod';
import type { Conversation, Protocol } from '../conversation/conversation';

/**
 * What the model says at one step. Fields combine: reasoning first, then text, then the tool call.
 * Strings may use `$1`…`$9` and `$&` for the groups of the rule's `regex`.
 */
export interface ReplySpec {
  text?: string;
  /** Emitted as Anthropic thinking, Chat Completions `reasoning_content`, Responses reasoning summary. */
  reasoning?: string;
  /** A call to a tool of the request, by exact name (else by a `__<name>` suffix, as MCP prefixes it). */
  toolCall?: { name: string; arguments?: Record<string, unknown> | string };
  /** One call to the CLI's own file-write tool, chosen from the request's tools by name and schema. */
  writeFile?: { path: string; content: string };
  /** Answer with this HTTP status and the protocol's error body instead of a reply. */
  error?: { status: number; message?: string };
  /** Wait before the response starts, in ms. */
  delayMs?: number;
  /** Spread the streamed deltas (or the whole non-streamed answer) over this many ms. */
  durationMs?: number;
}

/** What a function rule sees. */
export interface ReplyContext extends Conversation {
  /** The groups of the rule's regex (index 0 is the whole match), or `[userText]` without one. */
  groups: string[];
}

export interface RuleMatch {
  /** A substring the last user text must contain (case-sensitive). */
  contains?: string;
  /** A regular expression (source) the last user text must match. */
  regex?: string;
  /** Flags of `regex`. */
  flags?: string;
  /** Only requests on these protocols. */
  protocol?: Protocol | Protocol[];
}

/**
 * One scripted behaviour. `reply` as a list is a sequence of steps: step 0 answers the user text,
 * step n answers after n rounds of tool results. When the steps run out after a tool call, the model
 * ends the turn with `DONE …`.
 */
export interface Rule {
  /** Shown in the request log as the rule that answered. */
  name?: string;
  /** Omitted: matches every request. */
  match?: RuleMatch;
  /** A function may return undefined to let later rules answer. */
  reply: ReplySpec | ReplySpec[] | ((ctx: ReplyContext) => ReplySpec | ReplySpec[] | undefined);
}

const replySpecSchema = z.strictObject({
  text: z.string().optional(),
  reasoning: z.string().optional(),
  toolCall: z.strictObject({ name: z.string().min(1), arguments: z.union([z.record(z.string(), z.unknown()), z.string()]).optional() }).optional(),
  writeFile: z.strictObject({ path: z.string().min(1), content: z.string() }).optional(),
  error: z.strictObject({ status: z.number().int().min(400).max(599), message: z.string().optional() }).optional(),
  delayMs: z.number().int().min(0).optional(),
  durationMs: z.number().int().min(0).optional(),
});

const protocolSchema = z.enum(['anthropic', 'chat', 'responses']);

const ruleSchema = z.strictObject({
  name: z.string().optional(),
  match: z
    .strictObject({
      contains: z.string().optional(),
      regex: z
        .string()
        .optional()
        .refine(
          (source) => {
            if (source === undefined) return true;
            try {
              new RegExp(source);
              return true;
            } catch {
              return false;
            }
          },
          { message: 'not a valid regular expression' },
        ),
      flags: z.string().regex(/^[dgimsuvy]*$/).optional(),
      protocol: z.union([protocolSchema, z.array(protocolSchema)]).optional(),
    })
    .optional(),
  reply: z.union([replySpecSchema, z.array(replySpecSchema).min(1)]),
});

/** A script file: a list of rules, or `{ "rules": [...] }`. */
export const scriptSchema = z.union([z.array(ruleSchema), z.strictObject({ rules: z.array(ruleSchema) }).transform((s) => s.rules)]);
