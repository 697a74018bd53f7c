import type { Rib, RibContext } from '@keelson/ribs-contract';

/** An activated rib: its object, its one context, and what activation recorded about it. */
export interface ActiveRib {
  id: string;
  rib: Rib;
  ctx: RibContext;
  /** The surface ids declared at activation (the ones `registerRegion` may target). */
  surfaceIds: ReadonlySet<string>;
  packageName?: string;
  packageDir?: string;
}
