// The rolling restart's load (issue 30, 3f): the mix a client sends through the load balancer — nine
// federated queries to one keyed createProject — measured as a closed loop for the shape's capacity,
// then driven as an open loop at a fraction of it. A request is sent again only where the README
// allows (its "Errors" and "What survives what"): after a lost answer (no response, a reset) or a
// SERVICE_UNAVAILABLE, a query as it is and a mutation with the same idempotencyKey. Anything else
// — a masked error, the proxy's own 502/503 page, an answer still missing after 30 s of retries — is a failure.

/**
 * One query touching every subgraph: the project and its runs, the caller, the approvals inbox
 * (sessions), memory, swarms and chats. Not `sessions`: it reads every harness's native store from
 * disk (~1.5 s a call here), which would make the mix measure that disk scan.
 */
export const MIX_QUERY = `query ($id: ID!) {
  project(id: $id) { id name runs(first: 5) { edges { node { id status } } } }
  viewer { subject }
  approvals(first: 1) { edges { node { id } } }
  memorySearchMode { mode }
  swarms(first: 1) { edges { node { id } } }
  chats(first: 1) { edges { node { id } } }
}`;

const CREATE_PROJECT = 'mutation ($n: String!, $k: String) { createProject(input: { name: $n }, idempotencyKey: $k) { id name } }';

/** What one attempt came to: data, or why not and whether the README lets a client send it again. */
type Attempt = { ok: true; data: Record<string, unknown> } | { ok: false; retryable: boolean; reason: string };

/** Counts of the whole load, and the first failures with when they happened. */
export class LoadTally {
  sent = 0;
  ok = 0;
  /** Attempts sent again under the README's rule. */
  retried = 0;
  failed = 0;
  readonly failures: string[] = [];
  /** Why attempts were sent again, by reason (e.g. `SERVICE_UNAVAILABLE`, `no answer: ECONNRESET`). */
  readonly retryReasons = new Map<string, number>();
  /** Created projects' names → ids, as the client was told. */
  readonly created = new Map<string, string>();
  /** Every name a createProject was sent for (answered or not). */
  readonly attemptedNames: string[] = [];

  fail(what: string, reason: string): void {
    this.failed += 1;
    if (this.failures.length < 10) {
      const line = `${new Date().toISOString()} ${what}: ${reason}`;
      this.failures.push(line);
      process.stderr.write(`[load] failed ${line}\n`);
    }
  }

  retry(reason: string): void {
    this.retried += 1;
    const key = reason.startsWith('no answer') ? reason.slice(0, 40) : reason.slice(0, 60);
    this.retryReasons.set(key, (this.retryReasons.get(key) ?? 0) + 1);
  }

  summary(): string {
    const reasons = [...this.retryReasons].map(([r, n]) => `${r} ×${n}`).join(', ');
    return `${this.sent} sent, ${this.ok} ok, ${this.retried} retried${reasons ? ` (${reasons})` : ''}, ${this.failed} failed`;
  }
}

/** One POST through `url`, classified by the README's retry rule. */
async function attempt(url: string, token: string, query: string, variables: Record<string, unknown>): Promise<Attempt> {
  let status: number;
  let text: string;
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, variables }),
      // No answer within a minute is a lost answer.
      signal: AbortSignal.timeout(60_000),
    });
    status = res.status;
    text = await res.text();
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    return { ok: false, retryable: true, reason: `no answer: ${e.cause?.code ?? e.cause?.message ?? e.name ?? e.message}` };
  }
  let body: { data?: Record<string, unknown> | null; errors?: { message: string; extensions?: { code?: string } }[] };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    return { ok: false, retryable: false, reason: `HTTP ${status}, not a GraphQL answer: ${text.slice(0, 200).replace(/\s+/g, ' ')}` };
  }
  if (body.errors?.length) {
    const retryable = body.errors.every((e) => e.extensions?.code === 'SERVICE_UNAVAILABLE');
    return { ok: false, retryable, reason: retryable ? 'SERVICE_UNAVAILABLE' : `HTTP ${status}: ${JSON.stringify(body.errors).slice(0, 300)}` };
  }
  if (!body.data) return { ok: false, retryable: false, reason: `HTTP ${status}: no data: ${text.slice(0, 200)}` };
  return { ok: true, data: body.data };
}

/** Sends until answered, the same request again only where the README allows, for at most 30 s; the data, or undefined once it counts as failed. */
export async function sendWithRetries(tally: LoadTally, what: string, url: string, token: string, query: string, variables: Record<string, unknown>): Promise<Record<string, unknown> | undefined> {
  tally.sent += 1;
  const deadline = Date.now() + 30_000;
  for (let n = 0; ; n++) {
    const a = await attempt(url, token, query, variables);
    if (a.ok) {
      tally.ok += 1;
      return a.data;
    }
    if (!a.retryable) {
      tally.fail(what, a.reason);
      return undefined;
    }
    if (Date.now() > deadline) {
      tally.fail(what, `still ${a.reason} after 30 s of retries`);
      return undefined;
    }
    tally.retry(a.reason);
    await new Promise((r) => setTimeout(r, Math.min(2_000, 100 * 2 ** n)));
  }
}

/** The mix's request number `i`: every tenth a keyed createProject named `<prefix>-<i>`, the others the federated query on `projectId`. */
export function mixRequest(url: string, token: string, projectId: string, prefix: string, tally: LoadTally): (i: number) => Promise<void> {
  return async (i) => {
    if (i % 10 !== 9) {
      const data = await sendWithRetries(tally, `query #${i}`, url, token, MIX_QUERY, { id: projectId });
      if (data && (data.project as { id?: string } | null)?.id !== projectId) tally.fail(`query #${i}`, `answered without the project: ${JSON.stringify(data).slice(0, 200)}`);
      return;
    }
    const name = `${prefix}-${i}`;
    tally.attemptedNames.push(name);
    const data = await sendWithRetries(tally, `createProject ${name}`, url, token, CREATE_PROJECT, { n: name, k: `key-${name}` });
    const project = data?.createProject as { id: string; name: string } | undefined;
    if (project) tally.created.set(name, project.id);
  };
}

/** `clients` closed loops of `request` for `ms`: completed requests per second (failures counted in the request's tally). */
export async function closedLoop(clients: number, ms: number, request: (i: number) => Promise<void>): Promise<{ completed: number; perSecond: number }> {
  let next = 0;
  let completed = 0;
  const start = performance.now();
  const end = start + ms;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < end) {
        await request(next++);
        completed += 1;
      }
    }),
  );
  return { completed, perSecond: completed / ((performance.now() - start) / 1000) };
}

export interface OpenLoopResult {
  /** Arrivals the schedule had by the stop. */
  scheduled: number;
  /** Of those, sent (the others found `maxInFlight` requests still open and were not sent). */
  sent: number;
  /** Not sent: the in-flight bound was reached. */
  shed: number;
  /** The most requests open at once. */
  peakInFlight: number;
  /** Sent per second, from the first arrival to the stop. */
  realisedPerSecond: number;
}

/**
 * `request` on a fixed schedule of `perSecond` arrivals, whether or not the ones before were
 * answered (an open loop: a slow mesh still gets its load), at most `maxInFlight` open at once.
 * `stop()` ends the arrivals and resolves once every request sent has settled.
 */
export function openLoop(perSecond: number, maxInFlight: number, request: (i: number) => Promise<void>): { stop(): Promise<OpenLoopResult> } {
  const inFlight = new Set<Promise<void>>();
  let scheduled = 0;
  let sent = 0;
  let peakInFlight = 0;
  const start = performance.now();
  const tick = () => {
    const due = Math.floor(((performance.now() - start) * perSecond) / 1000) + 1;
    for (; scheduled < due; scheduled++) {
      if (inFlight.size >= maxInFlight) continue;
      sent += 1;
      const p = request(scheduled).finally(() => inFlight.delete(p));
      inFlight.add(p);
      peakInFlight = Math.max(peakInFlight, inFlight.size);
    }
  };
  tick();
  const timer = setInterval(tick, 5);
  return {
    async stop() {
      clearInterval(timer);
      const elapsed = (performance.now() - start) / 1000;
      await Promise.all([...inFlight]);
      return { scheduled, sent, shed: scheduled - sent, peakInFlight, realisedPerSecond: sent / elapsed };
    },
  };
}
