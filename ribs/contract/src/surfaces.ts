import { z } from 'zod';
import { canvasToneSchema } from './canvas';

/** The shortest auto-refresh interval a region may declare, in milliseconds. */
export const MIN_REGION_CADENCE_MS = 30_000;

/** How much slower the server heartbeat refreshes a region whose key has no live subscriber. */
export const IDLE_CADENCE_FACTOR = 6;

/** String inputs that ride each refresh run of a region's (or an action's) workflow. */
export const workflowArgsSchema = z.record(z.string(), z.string({ error: 'workflowArgs values are strings' }));

/** A `{ char, tone? }` chip shown in a region head. */
export const regionGlyphSchema = z.strictObject({
  char: z.string().min(1).max(4),
  tone: canvasToneSchema.optional(),
});
export type RegionGlyph = z.infer<typeof regionGlyphSchema>;

/** What a board action and a head action share: a label and a verb (or a workflow) to dispatch. */
const actionShape = {
  label: z.string().min(1).max(80),
  /** The verb dispatched to the rib's `onAction` as `action.type`. */
  action: z.string().min(1).max(128).optional(),
  /** The opaque payload dispatched with the verb. */
  payload: z.unknown().optional(),
  /** A catalog workflow the action launches instead of (or besides) a verb. */
  workflow: z.string().min(1).optional(),
  workflowArgs: workflowArgsSchema.optional(),
  /** Ask before dispatching; a string is the question shown. */
  confirm: z.union([z.boolean(), z.string().min(1).max(280)]).optional(),
  /** Destructive actions always ask first. */
  destructive: z.boolean().optional(),
};

const namesATarget = (a: { action?: string; workflow?: string }) => a.action !== undefined || a.workflow !== undefined;
const targetMessage = { message: 'an action names an action verb or a workflow' };

/** An action on a board card: may collect `fields` and carry expanded/inline/selected state. */
export const ribBoardActionSchema = z
  .strictObject({
    ...actionShape,
    fields: z.array(z.record(z.string(), z.unknown())).optional(),
    expanded: z.boolean().optional(),
    inline: z.boolean().optional(),
    selected: z.boolean().optional(),
  })
  .refine(namesATarget, targetMessage);
export type RibBoardAction = z.infer<typeof ribBoardActionSchema>;

const notOnAMenu = (field: string, why: string) =>
  z.undefined({ error: `a head action cannot carry ${field}: ${why}` }).optional();

/**
 * A verb on a region head, rendered in a ⋯ menu and dispatched to `onAction` like a board action.
 * The board-card affordances are rejected: a menu has no form to collect `fields` with, and its
 * items are plain buttons with no pressed state for `expanded` / `inline` / `selected`.
 */
export const headActionSchema = z
  .strictObject({
    ...actionShape,
    fields: notOnAMenu('fields', 'a menu has no form to collect them'),
    expanded: notOnAMenu('expanded', 'menu items carry no pressed state'),
    inline: notOnAMenu('inline', 'menu items carry no pressed state'),
    selected: notOnAMenu('selected', 'menu items carry no pressed state'),
  })
  .refine(namesATarget, targetMessage);
export type HeadAction = z.infer<typeof headActionSchema>;

const regionShape = {
  /** The snapshot key the region renders; in the rib's namespace. */
  key: z.string().min(1, 'a region key is required'),
  /** The catalog workflow a refresh of this region re-runs. */
  workflow: z.string().min(1).optional(),
  workflowArgs: workflowArgsSchema.optional(),
  /** `false` opts the region out of the server heartbeat; absent keeps it on. */
  serverRefresh: z.boolean({ error: 'serverRefresh is a boolean' }).optional(),
  /** The auto-refresh interval: an integer of at least 30000 ms. */
  cadenceMs: z
    .number()
    .int('cadenceMs is an integer number of milliseconds')
    .min(MIN_REGION_CADENCE_MS, `cadenceMs is at least ${MIN_REGION_CADENCE_MS}`)
    .optional(),
  title: z.string().min(1).optional(),
  glyph: regionGlyphSchema.optional(),
  /** Regions registered at runtime that share a group are kept contiguous. */
  group: z.string().min(1).optional(),
  groupTitle: z.string().min(1).max(120).optional(),
  byline: z.string().min(1).max(200).optional(),
  collapsible: z.boolean().optional(),
  collapsed: z.boolean().optional(),
  live: z.boolean().optional(),
  hideWhenEmpty: z.boolean().optional(),
  headActions: z
    .array(headActionSchema)
    .min(1, 'headActions carries 1 to 8 items')
    .max(8, 'headActions carries 1 to 8 items')
    .optional(),
};

/** A snapshot-backed board on a surface (header, footer or a row column). */
export const surfaceRegionSchema = z.strictObject(regionShape);
export type RibSurfaceRegion = z.infer<typeof surfaceRegionSchema>;

/** The banner region never collapses and is never hidden when empty, so it carries none of those flags. */
export const bannerRegionSchema = surfaceRegionSchema.omit({ collapsible: true, collapsed: true, hideWhenEmpty: true });
export type RibBannerRegion = z.infer<typeof bannerRegionSchema>;

/** A row column: one region, or a vertical stack of regions whose height flows independently. */
export const surfaceColumnSchema = z.union([surfaceRegionSchema, z.array(surfaceRegionSchema).min(1)]);
export type RibSurfaceColumn = z.infer<typeof surfaceColumnSchema>;

/** A row of columns; `zoneTitle` labels a zone of rows derived from a runtime region group. */
export const surfaceRowSchema = z.strictObject({
  columns: z.array(surfaceColumnSchema).min(1, 'a row has at least one column'),
  zoneTitle: z.string().min(1).max(120).optional(),
});
export type RibSurfaceRow = z.infer<typeof surfaceRowSchema>;

/** The layout of a surface: an optional header, banner and footer, and zero or more rows. */
export const surfaceLayoutSchema = z.strictObject({
  header: surfaceRegionSchema.optional(),
  banner: bannerRegionSchema.optional(),
  rows: z.array(surfaceRowSchema),
  footer: surfaceRegionSchema.optional(),
});
export type RibSurfaceLayout = z.infer<typeof surfaceLayoutSchema>;

/** A surface id: it rides the tab id `surface:<ribId>:<surfaceId>`, so it has no colon or whitespace. */
export const surfaceIdSchema = z
  .string()
  .min(1, 'a surface id is 1 to 64 characters')
  .max(64, 'a surface id is 1 to 64 characters')
  .regex(/^[^\s:]+$/, 'a surface id has no colon or whitespace');

/** A primary nav tab laying out region-bound boards. */
export const ribSurfaceDescriptorSchema = z.strictObject({
  id: surfaceIdSchema,
  /** Names the nav tab. */
  title: z.string().min(1).max(80),
  /** The page H1; absent means no H1 (the host never derives one from `title`). */
  heading: z.string().min(1).max(120).optional(),
  subtitle: z.string().min(1).max(200).optional(),
  /** Opt into the host's project chip; selecting dispatches the rib's `select-project` action. */
  projectScoped: z.boolean().optional(),
  /** Hide the host's per-region explore/select/open-full chrome (head actions still show). */
  hideRegionActions: z.boolean().optional(),
  /** A key in the rib's namespace holding `{ count, title? }`: a count above zero shows as a tab pip. */
  badgeKey: z.string().min(1).optional(),
  layout: surfaceLayoutSchema,
});
export type RibSurfaceDescriptor = z.infer<typeof ribSurfaceDescriptorSchema>;

/** The select-project action a project-scoped surface's chip dispatches. */
export const SELECT_PROJECT_ACTION = 'select-project';

/** The browser tab id of a surface: `surface:<ribId>:<surfaceId>`. */
export function surfaceTabId(ribId: string, surfaceId: string): string {
  return `surface:${ribId}:${surfaceId}`;
}

/** Normalizes a row column (one region or a stack) to its regions. */
export function columnRegions<R>(column: R | readonly R[]): readonly R[] {
  return Array.isArray(column) ? (column as readonly R[]) : [column as R];
}

/** Where a region sits in a layout. */
export type RegionSlot = 'header' | 'banner' | 'row' | 'footer';

/** Every region of a layout with its slot, in reading order. */
export function layoutRegions(layout: RibSurfaceLayout): { slot: RegionSlot; region: RibSurfaceRegion | RibBannerRegion }[] {
  const out: { slot: RegionSlot; region: RibSurfaceRegion | RibBannerRegion }[] = [];
  if (layout.header) out.push({ slot: 'header', region: layout.header });
  if (layout.banner) out.push({ slot: 'banner', region: layout.banner });
  for (const row of layout.rows) {
    for (const column of row.columns) for (const region of columnRegions(column)) out.push({ slot: 'row', region });
  }
  if (layout.footer) out.push({ slot: 'footer', region: layout.footer });
  return out;
}

/**
 * The interval a server-refreshed region runs at: its cadence floored to 30 s, six times that while
 * its key has no live subscriber. Undefined when the region declares no cadence.
 */
export function effectiveCadenceMs(region: { cadenceMs?: number }, idle = false): number | undefined {
  if (region.cadenceMs === undefined) return undefined;
  const floored = Math.max(MIN_REGION_CADENCE_MS, Math.floor(region.cadenceMs));
  return idle ? floored * IDLE_CADENCE_FACTOR : floored;
}
