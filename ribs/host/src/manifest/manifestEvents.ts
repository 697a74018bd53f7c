/** Why clients should re-fetch the manifest. */
export interface ManifestInvalidation {
  ribId: string;
  reason: 'region-registered' | 'region-unregistered' | 'rib-invalidated';
  /** ISO-8601. */
  at: string;
}

/** Listens for manifest invalidations. */
export type ManifestListener = (event: ManifestInvalidation) => void;

/**
 * The nudge behind the `manifestInvalidated` subscription: `registerRegion`, an unregister handle
 * and `invalidateManifest` emit here; the subgraph turns each into an event.
 */
export class ManifestEvents {
  private readonly listeners = new Set<ManifestListener>();

  constructor(private readonly onListenerError: (err: unknown) => void = () => undefined) {}

  on(listener: ManifestListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(ribId: string, reason: ManifestInvalidation['reason']): void {
    const event: ManifestInvalidation = { ribId, reason, at: new Date().toISOString() };
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (err) {
        this.onListenerError(err);
      }
    }
  }
}
