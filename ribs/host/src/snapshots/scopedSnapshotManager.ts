import { isInRibNamespace, ribNamespace, type SnapshotFrame, type SnapshotManager } from '@keelson/ribs-contract';
import type { WarningSink } from '../warnings';
import { toFrame, type SnapshotHub, type SnapshotOutcome } from './snapshotHub';

/** A rib's snapshot manager plus the host's control over its activation window. */
export interface ScopedSnapshotManager extends SnapshotManager {
  /** Runs the recomposes the rib asked for during activation (warm-ups); resolves when they settle. */
  endActivation(): Promise<void>;
}

function frameOf<T>(outcome: SnapshotOutcome): SnapshotFrame<T> | undefined {
  return outcome.status === 'published' ? toFrame<T>(outcome.frame) : undefined;
}

/**
 * The `SnapshotManager` a rib receives, confined to `rib:<id>` / `rib:<id>:*`: registering or
 * publishing another rib's key throws, reading it returns nothing. The bare rib id names the rib's
 * root key (`recompose(rib.id)` recomposes `rib:<id>`, where `composeBundle` is registered). A
 * recompose asked for while the rib activates (the warm-up from `registerTools`, before
 * `composeBundle` is registered) is deferred until activation registers the rib's composers.
 */
export function createScopedSnapshotManager(hub: SnapshotHub, ribId: string, warn: WarningSink): ScopedSnapshotManager {
  let activating = true;
  const full = (key: string) => (key === ribId ? ribNamespace(ribId) : key);
  const deferred: { key: string; settle: (frame: SnapshotFrame | undefined) => void }[] = [];
  const outside = (key: string) => `snapshot key '${key}' is outside rib '${ribId}''s namespace (rib:${ribId} or rib:${ribId}:*)`;

  const recompose = async <T>(asked: string): Promise<SnapshotFrame<T> | undefined> => {
    const key = full(asked);
    if (!isInRibNamespace(ribId, key)) {
      warn({ stage: 'runtime', rule: 'namespace', ribId, message: `recompose of ${outside(key)}; ignored` });
      return undefined;
    }
    if (activating) {
      return new Promise((settle) => deferred.push({ key, settle: settle as (frame: SnapshotFrame | undefined) => void }));
    }
    return frameOf<T>(await hub.recompose(key));
  };

  return {
    register(asked, compose, opts) {
      const key = full(asked);
      if (!isInRibNamespace(ribId, key)) throw new Error(`cannot register ${outside(key)}`);
      return hub.register(ribId, key, compose as () => unknown, opts?.validate);
    },
    recompose,
    async publish<T>(asked: string, payload: T) {
      const key = full(asked);
      if (!isInRibNamespace(ribId, key)) throw new Error(`cannot publish ${outside(key)}`);
      return frameOf<T>(await hub.publish(ribId, key, payload));
    },
    async read<T>(asked: string) {
      const key = full(asked);
      if (!isInRibNamespace(ribId, key)) return undefined;
      const record = await hub.read(key);
      return record ? toFrame<T>(record) : undefined;
    },
    keys() {
      return hub.keys(ribId);
    },
    async endActivation() {
      activating = false;
      const pending = deferred.splice(0);
      await Promise.all(pending.map(async ({ key, settle }) => settle(frameOf(await hub.recompose(key)))));
    },
  };
}
