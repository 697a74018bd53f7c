/**
 * The soak's verdict, from its figures alone (pure: no I/O, no clock).
 *
 * Pass = zero errors, no subscriber gap/repeat/reorder, and every resource flat over the last two
 * thirds of the run: the first and the last quarter of that window are compared, and the growth may be
 * at most max(5%, the resource's floor). A level is the median of a quarter's samples; the heap's is the
 * minimum, and its samples are what the process held live after its last full garbage collection
 * (`keelson_heap_live_bytes`, from V8's GC profile), not a raw heap sample: a raw sample is mostly
 * garbage not yet collected, and even the minimum of raw samples wandered 163–176 MB in the mesh over
 * a healthy run (it once failed a 5-minute CI run at +8.7 MB), while the live heap of the same process
 * moved 160.5 → 163.5 MB over ten minutes, and ≤ 0.5 MB between two samples after warm-up.
 *
 * Floors are what a healthy process moves by without leaking: 3 handles (a socket or timer coming and
 * going), 5 fds, 2 Postgres connections (the pool grows to its working size), 25 events of lag (one
 * burst of load caught mid-flight), 64 MB of RSS (a Node process's is judged outside the V8 heap: npm
 * start runs with --max-semi-space-size=64, and V8 growing its young generation moved the mesh's whole
 * RSS 533 → 620 MB over the judged window of healthy 5-minute runs — see `seriesOf`), and 8 MB of live heap (a process under
 * 100 MB, the gateway, fills its operation and plan caches by a few MB after warm-up; 5% of it is less).
 */

/** One resource's samples: seconds since the start and the value. */
export interface Series {
  /** `<process> <resource>` as the table prints it, e.g. `gateway rss`. */
  name: string;
  kind: ResourceKind;
  samples: { t: number; v: number }[];
}

export type ResourceKind = 'rss' | 'heap' | 'handles' | 'fds' | 'pg' | 'lag';

/** How much a resource may grow however small its level, in its own unit (bytes for rss/heap). */
export const floors: Record<ResourceKind, number> = {
  handles: 3,
  fds: 5,
  pg: 2,
  lag: 25,
  rss: 64 * 1024 * 1024,
  heap: 8 * 1024 * 1024,
};

/** The relative growth any resource may show. @default 5% */
export const allowedGrowth = 0.05;

export interface ResourceVerdict {
  name: string;
  kind: ResourceKind;
  /** Level of the first and the last quarter of the judged window (median; minimum for the heap). */
  first: number;
  last: number;
  growth: number;
  allowed: number;
  ok: boolean;
  /** Why it could not be judged (too few samples), when so: then it fails. */
  reason?: string;
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Judges one resource over a run of `durationS` seconds. */
export function judgeResource(series: Series, durationS: number): ResourceVerdict {
  const from = durationS / 3;
  const quarter = (durationS - from) / 4;
  const inFirst = series.samples.filter((s) => s.t >= from && s.t <= from + quarter).map((s) => s.v);
  const inLast = series.samples.filter((s) => s.t >= durationS - quarter && s.t <= durationS).map((s) => s.v);
  const level = series.kind === 'heap' ? (v: number[]) => Math.min(...v) : median;
  if (inFirst.length < 2 || inLast.length < 2) {
    return { name: series.name, kind: series.kind, first: NaN, last: NaN, growth: NaN, allowed: NaN, ok: false, reason: `too few samples (${inFirst.length} and ${inLast.length}; 2 each needed)` };
  }
  const first = level(inFirst);
  const last = level(inLast);
  const growth = last - first;
  const allowed = Math.max(allowedGrowth * Math.abs(first), floors[series.kind]);
  return { name: series.name, kind: series.kind, first, last, growth, allowed, ok: growth <= allowed };
}

/** What one subscriber received compared with the `events` table (sequence numbers of one stream). */
export interface SubscriberCheck {
  gaps: number[];
  repeats: number[];
  reorders: number;
}

/**
 * Compares the sequence numbers a subscriber received (in arrival order) with those the stream holds
 * for it: every expected one received (no gap), none twice (no repeat), each later than the one
 * before (no reorder). Events committed after the subscriber stopped reading are not expected.
 */
export function checkSubscriber(received: number[], expected: number[], lastReadSeq = Infinity): SubscriberCheck {
  const seen = new Set<number>();
  const repeats: number[] = [];
  let reorders = 0;
  let prev = -Infinity;
  for (const seq of received) {
    if (seen.has(seq)) repeats.push(seq);
    else if (seq < prev) reorders++;
    seen.add(seq);
    prev = Math.max(prev, seq);
  }
  const gaps = expected.filter((seq) => seq <= lastReadSeq && !seen.has(seq));
  return { gaps, repeats, reorders };
}

export interface Verdict {
  ok: boolean;
  errors: string[];
  subscribers: { name: string; check: SubscriberCheck }[];
  resources: ResourceVerdict[];
  /** One line per judged thing, for the log. */
  lines: string[];
}

const mb = (b: number) => `${(b / 1024 / 1024).toFixed(1)} MB`;

function fmt(kind: ResourceKind, v: number): string {
  return kind === 'rss' || kind === 'heap' ? mb(v) : String(Math.round(v * 10) / 10);
}

/** The whole verdict: errors, subscribers and resources, each line saying what it judged. */
export function judge(input: { durationS: number; errors: string[]; subscribers: { name: string; check: SubscriberCheck }[]; series: Series[] }): Verdict {
  const resources = input.series.map((s) => judgeResource(s, input.durationS));
  const lines: string[] = [];
  lines.push(`${input.errors.length === 0 ? 'PASS' : 'FAIL'} errors: ${input.errors.length}${input.errors.length ? ` (first: ${input.errors[0]})` : ''}`);
  const badSubs = input.subscribers.filter((s) => s.check.gaps.length || s.check.repeats.length || s.check.reorders);
  lines.push(
    `${badSubs.length === 0 ? 'PASS' : 'FAIL'} subscribers: ${input.subscribers.length} checked, ${badSubs.length} with a gap, repeat or reorder` +
      badSubs
        .slice(0, 5)
        .map((s) => `; ${s.name}: ${s.check.gaps.length} gaps, ${s.check.repeats.length} repeats, ${s.check.reorders} reorders`)
        .join(''),
  );
  for (const r of resources) {
    lines.push(
      r.reason
        ? `FAIL ${r.name}: ${r.reason}`
        : `${r.ok ? 'PASS' : 'FAIL'} ${r.name}: ${fmt(r.kind, r.first)} → ${fmt(r.kind, r.last)} (${r.growth >= 0 ? '+' : ''}${fmt(r.kind, r.growth)}, allowed +${fmt(r.kind, r.allowed)})`,
    );
  }
  const ok = input.errors.length === 0 && badSubs.length === 0 && input.subscribers.length > 0 && resources.every((r) => r.ok);
  return { ok, errors: input.errors, subscribers: input.subscribers, resources, lines };
}
