import { z } from 'zod';
import { openChatSeedSchema } from './agents';
import { workflowArgsSchema } from './surfaces';

/** Where `open-canvas` docks: the full reading sheet (`center`, the default) or a 520px inspector. */
export const canvasPlacementSchema = z.enum(['center', 'side']);
export type CanvasPlacement = z.infer<typeof canvasPlacementSchema>;

/** `surface:<ribId>:<surfaceId>`, the browser tab id `open-surface` switches to. */
export const surfaceTabIdSchema = z
  .string()
  .regex(/^surface:[a-z][a-z0-9-]{0,63}:[^\s:]{1,64}$/, 'a surfaceId is the tab id surface:<ribId>:<surfaceId>');

/**
 * A client effect a successful action may place in its `data`. The set is closed: an unknown or
 * malformed effect is rejected at the surface edge rather than treated as navigation.
 */
export const ribClientEffectSchema = z.discriminatedUnion('effect', [
  /** Open a fresh conversation seeded with `seed`. */
  z.strictObject({ effect: z.literal('open-chat'), seed: openChatSeedSchema }),
  /** Launch a catalog workflow; `stay` keeps the operator on the current surface. */
  z.strictObject({
    effect: z.literal('run-workflow'),
    workflow: z.string().min(1),
    args: workflowArgsSchema.optional(),
    stay: z.boolean().optional(),
  }),
  /** Open a snapshot; `html`, `markdown` and `log` documents always open centered. */
  z.strictObject({
    effect: z.literal('open-canvas'),
    key: z.string().min(1),
    title: z.string().optional(),
    placement: canvasPlacementSchema.optional(),
  }),
  /** Switch the active surface tab, optionally focusing one region. */
  z.strictObject({ effect: z.literal('open-surface'), surfaceId: surfaceTabIdSchema, regionKey: z.string().min(1).optional() }),
  /** Open an existing run in the run drawer (approval composer included). */
  z.strictObject({ effect: z.literal('open-run'), runId: z.string().min(1), workflow: z.string().min(1) }),
]);
export type RibClientEffect = z.infer<typeof ribClientEffectSchema>;
export type RibClientEffectName = RibClientEffect['effect'];

/** Every recognized effect name. */
export const RIB_CLIENT_EFFECTS: readonly RibClientEffectName[] = ['open-chat', 'run-workflow', 'open-canvas', 'open-surface', 'open-run'];

/** The only effects a reply to a `canvas-html` action may carry; the host drops any other. */
export const CANVAS_REPLY_EFFECTS: readonly RibClientEffectName[] = ['open-canvas', 'open-chat'];
