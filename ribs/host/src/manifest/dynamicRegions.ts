import type { RibSurfaceRegion, RibSurfaceRow } from '@keelson/ribs-contract';

interface DynamicRegion {
  ribId: string;
  surfaceId: string;
  region: RibSurfaceRegion;
}

/**
 * Regions ribs add at runtime with `registerRegion`. They render after a surface's declared rows,
 * one region per row, with regions sharing a `group` kept contiguous (a group's first `groupTitle`
 * becomes the `zoneTitle` of each of its rows).
 */
export class DynamicRegions {
  private readonly regions: DynamicRegion[] = [];

  /** Adds a region; the returned handle removes it and says whether it was still there. */
  add(ribId: string, surfaceId: string, region: RibSurfaceRegion): () => boolean {
    const entry: DynamicRegion = { ribId, surfaceId, region };
    const group = region.group;
    let at = this.regions.length;
    if (group !== undefined) {
      for (let i = this.regions.length - 1; i >= 0; i--) {
        const r = this.regions[i]!;
        if (r.ribId === ribId && r.surfaceId === surfaceId && r.region.group === group) {
          at = i + 1;
          break;
        }
      }
    }
    this.regions.splice(at, 0, entry);
    return () => {
      const index = this.regions.indexOf(entry);
      if (index === -1) return false;
      this.regions.splice(index, 1);
      return true;
    };
  }

  /** The regions added to one surface, in layout order. */
  regionsOf(ribId: string, surfaceId: string): RibSurfaceRegion[] {
    return this.regions.filter((r) => r.ribId === ribId && r.surfaceId === surfaceId).map((r) => r.region);
  }

  /** Every runtime region. */
  all(): readonly DynamicRegion[] {
    return [...this.regions];
  }

  /** The rows the surface's runtime regions render as. */
  rowsOf(ribId: string, surfaceId: string): RibSurfaceRow[] {
    const regions = this.regionsOf(ribId, surfaceId);
    const zoneTitles = new Map<string, string>();
    for (const region of regions) {
      if (region.group !== undefined && region.groupTitle !== undefined && !zoneTitles.has(region.group)) {
        zoneTitles.set(region.group, region.groupTitle);
      }
    }
    return regions.map((region) => {
      const zoneTitle = region.group !== undefined ? zoneTitles.get(region.group) : undefined;
      return { columns: [region], ...(zoneTitle !== undefined ? { zoneTitle } : {}) };
    });
  }
}
