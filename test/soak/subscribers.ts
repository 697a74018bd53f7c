import { decodeCursor, harnessEventTypes, streams } from '@keelson/schema';
import { createClient, type Client } from 'graphql-ws';
import { Client as PgClient } from 'pg';
import WebSocket from 'ws';
import { checkSubscriber, type SubscriberCheck } from './judge';

/**
 * The four streams the soak follows, each from its start (`after: "0"`), with the fields that show a
 * failure; `types`: the event types a subscriber gets, where the stream holds others (the harness
 * stream's TRANSCRIPT_APPENDED is for memory capture, not a client-facing HarnessEvent).
 */
const kinds: readonly { field: string; stream: string; query: string; types?: readonly string[] }[] = [
  { field: 'runEvents', stream: streams.runs, query: 'subscription SoakRuns { runEvents(after: "0") { cursor type error } }' },
  { field: 'projectEvents', stream: streams.projects, query: 'subscription SoakProjects { projectEvents(after: "0") { cursor type } }' },
  { field: 'approvalEvents', stream: streams.approvals, query: 'subscription SoakApprovals { approvalEvents(after: "0") { cursor type } }' },
  {
    field: 'harnessEvents',
    stream: streams.harness,
    types: harnessEventTypes,
    query: 'subscription SoakHarness { harnessEvents(after: "0") { __typename cursor ... on TurnComplete { status error } ... on HarnessError { code message } } }',
  },
];

interface Sub {
  name: string;
  stream: string;
  seqs: number[];
  ended?: string;
}

export interface Subscribers {
  count: number;
  /** Subscriptions ended by the server or by an error (each is an error of the soak). */
  failures(): string[];
  /** Events that report a failure (a failed turn, a harness error), once per event. */
  badEvents(): string[];
  /**
   * Waits (up to `timeoutMs`) until every subscriber has what the `events` table holds up to now,
   * then compares each one's sequence numbers with the table's.
   */
  check(databaseUrl: string, timeoutMs?: number): Promise<{ name: string; check: SubscriberCheck }[]>;
  close(): Promise<void>;
}

/** `total` subscriptions over `sockets` graphql-ws sockets to the gateway, the four kinds in turn. */
export async function startSubscribers(wsUrl: string, token: string, sockets = 20, total = 200): Promise<Subscribers> {
  const subs: Sub[] = [];
  const clients: Client[] = [];
  const bad = new Map<string, string>();
  const disposers: (() => void)[] = [];
  let closing = false;
  for (let s = 0; s < sockets; s++) {
    const client = createClient({
      url: wsUrl,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      lazy: false,
      connectionParams: { authorization: `Bearer ${token}` },
      onNonLazyError: () => undefined,
    });
    clients.push(client);
    for (let i = s; i < total; i += sockets) {
      const kind = kinds[i % kinds.length]!;
      const sub: Sub = { name: `${kind.field}#${i} (socket ${s})`, stream: kind.stream, seqs: [] };
      subs.push(sub);
      disposers.push(
        client.subscribe<Record<string, Record<string, unknown>>>(
          { query: kind.query },
          {
            next: (r) => {
              if (r.errors?.length) return void (sub.ended ??= `${sub.name}: ${JSON.stringify(r.errors)}`);
              const ev = r.data?.[kind.field];
              if (!ev) return;
              const seq = decodeCursor(String(ev.cursor));
              sub.seqs.push(seq);
              const failed = (ev.__typename === 'TurnComplete' && ev.status !== 'COMPLETED') || ev.__typename === 'HarnessError' || (kind.field === 'runEvents' && ev.error);
              if (failed) bad.set(`${kind.stream}:${seq}`, `${kind.field} ${seq}: ${JSON.stringify(ev)}`);
            },
            error: (err) => {
              if (!closing) sub.ended ??= `${sub.name} ended: ${err instanceof Error ? err.message : JSON.stringify(err)}`;
            },
            complete: () => {
              if (!closing) sub.ended ??= `${sub.name} completed by the server`;
            },
          },
        ),
      );
    }
  }
  return {
    count: subs.length,
    failures: () => subs.flatMap((s) => (s.ended ? [s.ended] : [])),
    badEvents: () => [...bad.values()],
    async check(databaseUrl, timeoutMs = 60_000) {
      const pg = new PgClient({ connectionString: databaseUrl });
      await pg.connect();
      try {
        const expected = new Map<string, number[]>();
        for (const kind of kinds) {
          const { rows } = kind.types
            ? await pg.query<{ seq: string }>('SELECT seq FROM events WHERE stream = $1 AND type = ANY($2) ORDER BY seq', [kind.stream, kind.types])
            : await pg.query<{ seq: string }>('SELECT seq FROM events WHERE stream = $1 ORDER BY seq', [kind.stream]);
          expected.set(kind.stream, rows.map((r) => Number(r.seq)));
        }
        const upTo = (stream: string) => expected.get(stream)!.at(-1) ?? 0;
        const deadline = Date.now() + timeoutMs;
        while (Date.now() < deadline && subs.some((s) => !s.ended && Math.max(0, ...s.seqs) < upTo(s.stream))) await new Promise((r) => setTimeout(r, 200));
        return subs.map((s) => ({ name: s.name, check: checkSubscriber(s.seqs, expected.get(s.stream)!, upTo(s.stream)) }));
      } finally {
        await pg.end();
      }
    },
    async close() {
      closing = true;
      for (const d of disposers) d();
      await Promise.all(clients.map((c) => c.dispose()));
    },
  };
}
