/**
 * Which snapshot keys have a live `snapshotFrames` subscriber in this process. The region heartbeat
 * refreshes a live key on its cadence and an idle one six times slower; it hears of each 0 → 1 and
 * 1 → 0 transition.
 */
export class LiveKeys {
  private readonly counts = new Map<string, number>();
  private readonly listeners = new Set<(key: string, live: boolean) => void>();

  /** Counts a subscriber of `keys` until the returned release is called (idempotent). */
  watch(keys: Iterable<string>): () => void {
    const held = [...new Set(keys)];
    for (const key of held) {
      const n = (this.counts.get(key) ?? 0) + 1;
      this.counts.set(key, n);
      if (n === 1) this.emit(key, true);
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const key of held) {
        const n = (this.counts.get(key) ?? 1) - 1;
        if (n <= 0) {
          this.counts.delete(key);
          this.emit(key, false);
        } else this.counts.set(key, n);
      }
    };
  }

  isLive(key: string): boolean {
    return (this.counts.get(key) ?? 0) > 0;
  }

  onChange(listener: (key: string, live: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(key: string, live: boolean): void {
    for (const listener of this.listeners) listener(key, live);
  }
}

/** Wraps a subscription's iterator so its subscriber is counted live until it ends, however it ends. */
export function watched<T>(iterator: AsyncIterableIterator<T>, release: () => void): AsyncIterableIterator<T> {
  return {
    async next() {
      try {
        const step = await iterator.next();
        if (step.done) release();
        return step;
      } catch (err) {
        release();
        throw err;
      }
    },
    async return() {
      release();
      return (await iterator.return?.()) ?? { value: undefined, done: true };
    },
    async throw(err: unknown) {
      release();
      if (iterator.throw) return iterator.throw(err);
      throw err;
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}
