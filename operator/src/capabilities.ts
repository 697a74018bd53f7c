import type { EventLog } from '@keelson/platform';
import { CAPABILITY_CHANGED, streams, type CapabilityChangePayload, type CapabilitySource } from '@keelson/schema';
import type { DataSource } from 'typeorm';

/** What a read field answers now about one capability (computed by the same code as the field). */
export interface CapabilityObservation {
  id: string;
  available: boolean;
  state: Record<string, string | number | boolean | null>;
  reason: string | null;
}

export interface CapabilityWatcherOptions {
  dataSource: DataSource;
  events: EventLog;
  source: CapabilitySource;
  /** The read field's own computation (never a copy of it): what is true now. */
  observe: () => Promise<CapabilityObservation[]>;
  /** How often to compare. @default 10000 */
  intervalMs?: number;
  /**
   * `observe` lists everything there is (active ribs): a key it no longer lists whose last event said
   * available is reported unavailable. @default false (every key is always listed)
   */
  complete?: { reason: string };
  log: { warn(obj: unknown, msg?: string): void };
}

function same(a: CapabilityChangePayload | undefined, b: CapabilityObservation): boolean {
  if (!a) return false;
  const keys = [...new Set([...Object.keys(a.state ?? {}), ...Object.keys(b.state)])];
  // The reason is informative (it may carry a time); a change is in `available` or the state's facts.
  return a.available === b.available && keys.every((k) => (a.state?.[k] ?? null) === (b.state[k] ?? null));
}

/**
 * Detects capability changes in the process that owns them: every `intervalMs` it asks the read
 * field's computation what is true now, compares each capability with the last `capabilities` event
 * of its key, and appends CAPABILITY_CHANGED when it differs (the first observation of a key too,
 * with `previous: null`). The event log is the only record: no state table, so a restart compares
 * against what was last said, and several processes watching the same source (under an advisory
 * lock per key) say each change once. A plain interval, for detection only: nothing durable waits on it.
 */
export class CapabilityWatcher {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();
  private stopped = false;

  constructor(private readonly opts: CapabilityWatcherOptions) {}

  /** Compares once now, then every interval. */
  start(): this {
    const tick = () => {
      this.running = this.poll().catch((err: unknown) => this.opts.log.warn({ err, source: this.opts.source }, 'comparing capabilities failed; next interval retries'));
    };
    tick();
    this.timer = setInterval(tick, this.opts.intervalMs ?? 10_000);
    this.timer.unref();
    return this;
  }

  /** One comparison; the number of changes appended. */
  async poll(): Promise<number> {
    if (this.stopped) return 0;
    const seen = await this.opts.observe();
    if (this.opts.complete) {
      const listed = new Set(seen.map((o) => o.id));
      const last = (await this.opts.dataSource.query(
        `SELECT DISTINCT ON (key) key, payload FROM events WHERE stream = $1 AND key LIKE $2 ORDER BY key, seq DESC`,
        [streams.capabilities, `${this.opts.source}:%`],
      )) as { key: string; payload: CapabilityChangePayload }[];
      for (const { payload } of last) {
        if (payload.available && !listed.has(payload.id)) seen.push({ id: payload.id, available: false, state: { active: false }, reason: this.opts.complete.reason });
      }
    }
    let changes = 0;
    for (const o of seen) {
      const key = `${this.opts.source}:${o.id}`;
      const changed = await this.opts.dataSource.transaction(async (m) => {
        await m.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`keelson-capability:${key}`]);
        const [last] = (await m.query(`SELECT payload FROM events WHERE stream = $1 AND key = $2 ORDER BY seq DESC LIMIT 1`, [streams.capabilities, key])) as {
          payload: CapabilityChangePayload;
        }[];
        if (same(last?.payload, o)) return false;
        const payload: CapabilityChangePayload = { source: this.opts.source, id: o.id, available: o.available, previous: last ? last.payload.available : null, state: o.state, reason: o.reason };
        await this.opts.events.append(m, { stream: streams.capabilities, key, type: CAPABILITY_CHANGED, payload, actor: null });
        return true;
      });
      if (changed) changes++;
    }
    return changes;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }
}

/**
 * A watcher of a source that has one capability (the memory search mode, the swarm bus): `observe`
 * answers that capability, named `id`.
 */
export function singleCapabilityWatcher(
  opts: Omit<CapabilityWatcherOptions, 'observe' | 'complete'> & { id: string; observe: () => Promise<Omit<CapabilityObservation, 'id'>> },
): CapabilityWatcher {
  const { id, observe, ...rest } = opts;
  return new CapabilityWatcher({ ...rest, observe: async () => [{ id, ...(await observe()) }] });
}
