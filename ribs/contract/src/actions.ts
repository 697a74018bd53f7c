import { z } from 'zod';

/**
 * Where an action came from, stamped by the host and never by the caller: `board` is a trusted
 * host-UI dispatch; `canvas-html` is relayed from a sandboxed html canvas, whose markup and scripts
 * are untrusted (a frame script can post on load without a user gesture).
 */
export const ribActionOriginSchema = z.enum(['board', 'canvas-html']);
export type RibActionOrigin = z.infer<typeof ribActionOriginSchema>;

/**
 * An inbound verb for a rib's `onAction`. `type` is rib-defined; `payload` stays opaque for the rib
 * to narrow. Treat absent or `board` origin as trusted; gate `canvas-html` verbs to a safe subset.
 */
export const ribActionSchema = z.strictObject({
  type: z.string().min(1, 'an action type is required').max(128, 'an action type is at most 128 characters'),
  payload: z.unknown().optional(),
  origin: ribActionOriginSchema.optional(),
});
export type RibAction = z.infer<typeof ribActionSchema>;

/**
 * What `onAction` returns. A successful result may carry a client effect (see `ribClientEffectSchema`)
 * as its `data`.
 */
export type RibActionResult = { ok: true; data?: unknown } | { ok: false; error: string };

/** The wire shape of an action result. */
export const ribActionResultSchema = z.discriminatedUnion('ok', [
  z.strictObject({ ok: z.literal(true), data: z.unknown().optional() }),
  z.strictObject({ ok: z.literal(false), error: z.string() }),
]);

/** The conventional action type chat sends to a rib that sets `acceptsIngest`. */
export const INGEST_ACTION_TYPE = 'ingest';

/** The longest message body an ingest carries, in characters. */
export const RIB_INGEST_TEXT_MAX = 32_000;

/**
 * The payload of an ingest action: a persisted chat message (`text`, capped) and the conversation
 * that produced it. Untrusted user data: narrow it at the rib boundary.
 */
export const ribIngestPayloadSchema = z.strictObject({
  text: z
    .string()
    .min(1, 'ingest text is required')
    .max(RIB_INGEST_TEXT_MAX, `ingest text is at most ${RIB_INGEST_TEXT_MAX} characters`),
  sourceConversationId: z.string().min(1).max(128).optional(),
});
export type RibIngestPayload = z.infer<typeof ribIngestPayloadSchema>;
