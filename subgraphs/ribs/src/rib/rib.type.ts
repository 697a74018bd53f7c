import { JSONScalar } from '@keelson/kit';
import type { CanvasKind as CanvasKindValue, RegionSlot as RegionSlotValue } from '@keelson/ribs-contract';
import { Directive, Field, ID, Int, ObjectType, registerEnumType } from 'type-graphql';

/** The seed's closed canvas kinds, as GraphQL enum values. */
export const CanvasKind = { MARKDOWN: 'MARKDOWN', VIEW: 'VIEW', HTML: 'HTML', LOG: 'LOG' } as const;
registerEnumType(CanvasKind, {
  name: 'CanvasKind',
  description: 'How a view renders (seed `canvasKind` markdown | view | html | log): MARKDOWN and VIEW natively, HTML in a sandboxed iframe, LOG verbatim.',
});
export function canvasKindOf(kind: CanvasKindValue): keyof typeof CanvasKind {
  return kind.toUpperCase() as keyof typeof CanvasKind;
}

export const RegionSlot = { HEADER: 'HEADER', BANNER: 'BANNER', ROW: 'ROW', FOOTER: 'FOOTER' } as const;
registerEnumType(RegionSlot, { name: 'RegionSlot', description: 'Where a region sits in a surface layout.' });
export function regionSlotOf(slot: RegionSlotValue): keyof typeof RegionSlot {
  return slot.toUpperCase() as keyof typeof RegionSlot;
}

@ObjectType({ description: 'A view: a snapshot key bound to a canvas renderer (pure presentation, re-validated per request).' })
export class RibView {
  @Field({ description: 'The snapshot key, in the rib\'s namespace (`rib:<id>` or `rib:<id>:*`).' })
  key!: string;

  @Field(() => CanvasKind)
  canvasKind!: keyof typeof CanvasKind;

  @Field(() => String, { nullable: true })
  title!: string | null;
}

@ObjectType({ description: 'One snapshot-backed board of a surface, flattened from its layout in reading order.' })
export class RibSurfaceRegion {
  @Field()
  key!: string;

  @Field(() => RegionSlot)
  slot!: keyof typeof RegionSlot;

  @Field(() => String, { nullable: true })
  title!: string | null;

  @Field(() => String, { nullable: true, description: 'The catalog workflow a refresh of this region re-runs.' })
  workflow!: string | null;

  @Field(() => Int, { nullable: true, description: 'The auto-refresh interval in ms (at least 30000).' })
  cadenceMs!: number | null;

  @Field(() => Boolean, { nullable: true, description: 'false opts the region out of the server heartbeat; null keeps it on.' })
  serverRefresh!: boolean | null;

  @Field({ description: 'Whether the region head shows a freshness dot while frames stream in.' })
  live!: boolean;

  @Field(() => JSONScalar, { nullable: true, description: 'The region-head verbs (1–8), dispatched like board actions.' })
  headActions!: unknown;

  @Field(() => JSONScalar, { description: 'The whole region descriptor as the seed shapes it (glyph, group, byline, collapse flags, …).' })
  descriptor!: unknown;
}

@ObjectType({ description: 'A surface: a primary nav tab laying out region-bound boards (re-validated per request).' })
export class RibSurface {
  @Field()
  id!: string;

  @Field({ description: 'The browser tab id `surface:<ribId>:<surfaceId>` (what the open-surface effect names).' })
  tabId!: string;

  @Field({ description: 'Names the nav tab.' })
  title!: string;

  @Field(() => String, { nullable: true, description: 'The page H1; null means none (never derived from title).' })
  heading!: string | null;

  @Field(() => String, { nullable: true })
  subtitle!: string | null;

  @Field({ description: 'Opts into the host project chip (which dispatches the rib\'s select-project action).' })
  projectScoped!: boolean;

  @Field()
  hideRegionActions!: boolean;

  @Field(() => String, { nullable: true, description: 'A key holding `{ count, title? }`: a count above zero shows as a tab pip.' })
  badgeKey!: string | null;

  @Field(() => [RibSurfaceRegion], { description: 'Every region of the layout, runtime-added ones included, in reading order.' })
  regions!: RibSurfaceRegion[];

  @Field(() => JSONScalar, { description: 'The layout as the seed shapes it: header, banner, rows of columns (a region or a stack), footer.' })
  layout!: unknown;
}

@ObjectType({ description: 'A rib\'s credential probe result; a throwing probe reads as unauthenticated with the error.' })
export class RibAuthStatus {
  @Field()
  authenticated!: boolean;

  @Field(() => String, { nullable: true })
  statusMessage!: string | null;
}

@ObjectType({ description: 'A tool in the shared registry. Names are global; the family is the text before the first underscore.' })
export class ToolInfo {
  @Field()
  name!: string;

  @Field()
  description!: string;

  @Field()
  family!: string;

  @Field(() => ID, { nullable: true, description: 'The owning rib; null for the host\'s own tools (keelson_docs).' })
  ownerRibId!: string | null;

  @Field({ description: 'Advisory: the tool changes state.' })
  stateChanging!: boolean;

  @Field({ description: 'Advisory: a UI should confirm before running it.' })
  requiresConfirmation!: boolean;
}

@ObjectType({ description: 'A named chat agent a rib offers; resolveAgent builds its seed on selection.' })
export class AgentSummary {
  @Field(() => ID)
  ribId!: string;

  @Field()
  slug!: string;

  @Field()
  name!: string;

  @Field(() => String, { nullable: true })
  description!: string | null;
}

@ObjectType({ description: 'A slash command a rib adds to the chat composer.' })
export class CommandDescriptor {
  @Field(() => ID)
  ribId!: string;

  @Field({ description: 'Invoked as `/<name>`.' })
  name!: string;

  @Field()
  description!: string;

  @Field(() => String, { nullable: true, description: 'What the one positional argument is.' })
  argumentHint!: string | null;

  @Field({ description: 'Whether completeCommand offers type-ahead for the argument.' })
  completes!: boolean;
}

/**
 * An active rib (or an installed one the `KEELSON_RIBS` filter left inactive: `registered` false,
 * nothing else). Other subgraphs extend it (`Rib.workflows`, `Rib.runs`).
 */
@ObjectType({ description: 'A rib: the harness\'s one extension point, as the manifest serves it. Other subgraphs extend it.' })
@Directive('@key(fields: "id")')
export class Rib {
  @Field(() => ID, { description: 'Lowercase kebab-case, the package suffix of `@keelson/rib-<id>`.' })
  id!: string;

  @Field()
  displayName!: string;

  @Field({ description: 'True for an active rib; false for one installed but filtered out by KEELSON_RIBS.' })
  registered!: boolean;

  @Field({ description: 'Whether the rib handles ribAction / canvasAction.' })
  hasOnAction!: boolean;

  @Field({ description: 'Whether the rib handles ingest (absent in the seed reads as false).' })
  acceptsIngest!: boolean;
}

@ObjectType({ description: 'The active ribs and the operator\'s cross-rib grants.' })
export class RibManifest {
  ribIds!: string[];

  @Field(() => JSONScalar, {
    nullable: true,
    description:
      'caller rib → target rib → tool names (`*` = all). An empty object means "reported, and there are none"; null means "not reported" (an older server). This server always reports.',
  })
  crossRibGrants!: Record<string, Record<string, string[]>> | null;
}
