import type { Ops } from './ops';

/** Latencies (ms) per operation and every error, as the soak's load met them. */
export class LoadStats {
  readonly latencies = new Map<string, number[]>();
  readonly errors: string[] = [];

  record(op: string, ms: number): void {
    const list = this.latencies.get(op) ?? [];
    list.push(ms);
    this.latencies.set(op, list);
  }

  error(op: string, err: unknown): void {
    this.errors.push(`${op} at ${new Date().toISOString()}: ${err instanceof Error ? err.message : String(err)}`);
  }

  /** Count, p50 and p99 (ms) per operation over the whole run so far. */
  percentiles(): { op: string; count: number; p50: number; p99: number }[] {
    return [...this.latencies].map(([op, list]) => {
      const s = [...list].sort((a, b) => a - b);
      const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
      return { op, count: s.length, p50: at(0.5), p99: at(0.99) };
    });
  }
}

/**
 * Every `everyMs`, starts `task` (without waiting for the one before: a slow mesh gets the load
 * anyway) until stopped; `stop()` resolves once every started task is done.
 */
function every(everyMs: number, op: string, stats: LoadStats, task: () => Promise<void>): { stop(): Promise<void> } {
  const inFlight = new Set<Promise<void>>();
  const fire = () => {
    const t0 = performance.now();
    const p = task().then(
      () => stats.record(op, performance.now() - t0),
      (err: unknown) => stats.error(op, err),
    );
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  };
  fire();
  const timer = setInterval(fire, everyMs);
  return {
    async stop() {
      clearInterval(timer);
      await Promise.all([...inFlight]);
    },
  };
}

/** The steady mixed load: 2 queries/s, a keyed project + lock every 10 s, a gated run every 20 s, a pi turn a minute. */
export function startLoad(ops: Ops, stats: LoadStats): { stop(): Promise<void> } {
  const loops = [
    every(500, 'query', stats, ops.query),
    every(10_000, 'createProject+lock', stats, ops.keyedProject),
    every(20_000, 'project-check', stats, ops.projectCheck),
    every(60_000, 'pi turn', stats, ops.piTurn),
  ];
  return { stop: async () => void (await Promise.all(loops.map((l) => l.stop()))) };
}
