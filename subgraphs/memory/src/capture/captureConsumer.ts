import type { EventLog, EventNotifier } from '@keelson/kit';
import {
  harnessOfSessionId,
  sessionCreatedPayloadSchema,
  sessionUpdatedPayloadSchema,
  streams,
  transcriptAppendedPayloadSchema,
  type EventEnvelope,
  type SessionCreatedPayload,
  type SessionUpdatedPayload,
  type TranscriptAppendedPayload,
} from '@keelson/schema';
import type { Logger } from '@keelson/service';
import type { DataSource, EntityManager } from 'typeorm';
import { MAX_CONTENT_CHARS, type MemoryEntry } from '../memory/memory.input';
import type { MemoryService } from '../memory/memory.service';
import { transcriptEntrySchema, type TranscriptEntry, type TranscriptSource } from './transcriptSource';

export interface CaptureConsumerOptions {
  dataSource: DataSource;
  events: EventLog;
  notifier: EventNotifier;
  memory: MemoryService;
  source: TranscriptSource;
  log: Logger;
  /** The cursor's name: replicas sharing it share the work, exactly once. @default memory-capture */
  name?: string;
  /** @default harness */
  stream?: string;
  /** Events per transaction. @default 50 */
  batchSize?: number;
  /** Bound on one transcript fetch. @default 10000 */
  fetchTimeoutMs?: number;
  /** First delay after a failed batch; doubles up to 5 s. @default 200 */
  retryDelayMs?: number;
  /** Called after each committed batch (e.g. to embed what it stored). */
  onCommitted?: () => void;
}

type Prepared =
  | { type: 'SESSION_CREATED'; payload: SessionCreatedPayload }
  | { type: 'TRANSCRIPT_APPENDED'; payload: TranscriptAppendedPayload; entries: TranscriptEntry[] }
  | { type: 'SESSION_UPDATED'; payload: SessionUpdatedPayload }
  | { type: 'IGNORED' };

/** Another replica advanced the shared cursor first: the batch is theirs. */
class CursorMoved extends Error {}

const ROLE = /^[a-z][a-z0-9_-]{0,31}$/;

/** Normalizes an entry: a lowercase role (`other` when it is no role name), content capped. */
function normalize(e: TranscriptEntry): TranscriptEntry {
  const role = e.role.trim().toLowerCase();
  const over = e.content.length - MAX_CONTENT_CHARS;
  const content = over > 0 ? `${e.content.slice(0, MAX_CONTENT_CHARS - 64)}\n… [${over + 64} characters not stored]` : e.content;
  return { ...e, role: ROLE.test(role) ? role : 'other', content };
}

/** A usable timestamp, or null (the append then stamps now). */
function validDate(value: Date | string | null | undefined): Date | null {
  if (value == null) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Capture: tails the `harness` stream and stores every session's transcript in memory under its
 * canonical SessionId, exactly once.
 *
 * Per batch: bodies are fetched by id through the TranscriptSource first (no transaction is held
 * open over the network); then the messages, conversations, rotation breadcrumbs and the consumer's
 * cursor commit in one transaction. A crash anywhere leaves either the whole batch and its cursor or
 * neither, and the next run resumes from the cursor; dedupe keys (the native message ids) make a
 * replay of the same entries store nothing. Replicas sharing a name take the cursor row's lock and
 * check it has not moved, so a batch is applied once even when several run.
 */
export class CaptureConsumer {
  readonly name: string;
  readonly stream: string;
  private readonly batchSize: number;
  private readonly fetchTimeoutMs: number;
  private readonly retryDelayMs: number;
  private readonly abort = new AbortController();
  private loop: Promise<void> | undefined;
  private cursorRowReady = false;

  constructor(private readonly opts: CaptureConsumerOptions) {
    this.name = opts.name ?? 'memory-capture';
    this.stream = opts.stream ?? streams.harness;
    this.batchSize = opts.batchSize ?? 50;
    this.fetchTimeoutMs = opts.fetchTimeoutMs ?? 10_000;
    this.retryDelayMs = opts.retryDelayMs ?? 200;
  }

  /** Follows the stream live until `stop()`: catches up, then waits for notifications. */
  start(): void {
    this.loop ??= this.run();
  }

  /** Stops following; an in-flight batch commits whole or rolls back. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }

  /** The last stream sequence this consumer has stored (0 before the first). */
  async position(): Promise<number> {
    await this.ensureCursorRow();
    const rows = (await this.opts.dataSource.query('SELECT position FROM memory_capture_cursors WHERE consumer = $1', [this.name])) as {
      position: string;
    }[];
    return Number(rows[0]!.position);
  }

  /** Processes every event available now, batch by batch; rejects on the first failed batch. @returns events applied */
  async catchUp(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.step();
      if (n === 0) return total;
      total += Math.max(n, 0);
    }
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    let delay = this.retryDelayMs;
    while (!signal.aborted) {
      try {
        await this.opts.notifier.ready();
        // A stopped notifier wakes nobody again: stop rather than spin.
        if (this.opts.notifier.isStopped) return;
        // Taken before the read: a commit after the read's snapshot wakes the wait below.
        const ticket = this.opts.notifier.ticket(this.stream);
        const n = await this.step();
        delay = this.retryDelayMs;
        if (n === 0) await this.opts.notifier.wait(ticket, signal);
      } catch (err) {
        if (signal.aborted) return;
        this.opts.log.error({ err, consumer: this.name }, 'capture batch failed; retrying from the durable cursor');
        await sleep(delay, signal);
        delay = Math.min(delay * 2, 5_000);
      }
    }
  }

  private async ensureCursorRow(): Promise<void> {
    if (this.cursorRowReady) return;
    await this.opts.dataSource.query(
      'INSERT INTO memory_capture_cursors (consumer, stream) VALUES ($1, $2) ON CONFLICT (consumer) DO NOTHING',
      [this.name, this.stream],
    );
    this.cursorRowReady = true;
  }

  /** One batch. @returns events applied; 0 when none were waiting; -1 when another replica took them */
  private async step(): Promise<number> {
    const from = await this.position();
    const events = await this.opts.events.read(this.stream, from, { limit: this.batchSize });
    if (!events.length) return 0;
    const prepared: Prepared[] = [];
    for (const event of events) prepared.push(await this.prepare(event));
    const last = events.at(-1)!.seq;
    try {
      await this.opts.dataSource.transaction(async (m) => {
        const [row] = (await m.query('SELECT position FROM memory_capture_cursors WHERE consumer = $1 FOR UPDATE', [this.name])) as {
          position: string;
        }[];
        if (Number(row!.position) !== from) throw new CursorMoved();
        for (const p of prepared) await this.apply(m, p);
        await m.query('UPDATE memory_capture_cursors SET position = $2, updated_at = now() WHERE consumer = $1', [this.name, last]);
      });
    } catch (err) {
      if (err instanceof CursorMoved) return -1;
      throw err;
    }
    this.opts.onCommitted?.();
    return events.length;
  }

  /** Validates an event and fetches the bodies it names; a malformed event is logged and skipped. */
  private async prepare(event: EventEnvelope): Promise<Prepared> {
    const malformed = (issues: unknown): Prepared => {
      this.opts.log.warn({ consumer: this.name, seq: event.seq, type: event.type, issues }, 'skipping a malformed harness event');
      return { type: 'IGNORED' };
    };
    switch (event.type) {
      case 'SESSION_CREATED': {
        const r = sessionCreatedPayloadSchema.safeParse(event.payload);
        return r.success ? { type: 'SESSION_CREATED', payload: r.data } : malformed(r.error.issues);
      }
      case 'SESSION_UPDATED': {
        const r = sessionUpdatedPayloadSchema.safeParse(event.payload);
        return r.success ? { type: 'SESSION_UPDATED', payload: r.data } : malformed(r.error.issues);
      }
      case 'TRANSCRIPT_APPENDED': {
        const r = transcriptAppendedPayloadSchema.safeParse(event.payload);
        if (!r.success) return malformed(r.error.issues);
        return { type: 'TRANSCRIPT_APPENDED', payload: r.data, entries: await this.fetch(r.data) };
      }
      default:
        return { type: 'IGNORED' };
    }
  }

  /** The named entries in the event's order; unknown ids and malformed entries are logged and left out. */
  private async fetch(payload: TranscriptAppendedPayload): Promise<TranscriptEntry[]> {
    const signal = AbortSignal.any([this.abort.signal, AbortSignal.timeout(this.fetchTimeoutMs)]);
    const fetched = await this.opts.source.entries(payload.sessionId, payload.entryIds, signal);
    const byId = new Map<string, TranscriptEntry>();
    for (const raw of fetched) {
      const r = transcriptEntrySchema.safeParse(raw);
      if (r.success) byId.set(r.data.id, normalize(r.data));
      else this.opts.log.warn({ sessionId: payload.sessionId, issues: r.error.issues }, 'skipping a malformed transcript entry');
    }
    const missing = payload.entryIds.filter((id) => !byId.has(id));
    if (missing.length) this.opts.log.warn({ sessionId: payload.sessionId, missing }, 'transcript entries named by an event were not found');
    return payload.entryIds.flatMap((id) => {
      const entry = byId.get(id);
      byId.delete(id);
      return entry ? [entry] : [];
    });
  }

  /** The payload's agent, else the agent the session's conversation already has, else the harness. */
  private async agentFor(m: EntityManager, p: SessionCreatedPayload): Promise<string> {
    return p.agent ?? (await this.opts.memory.agentOfSession(m, p.sessionId)) ?? p.harnessId ?? harnessOfSessionId(p.sessionId);
  }

  private async apply(m: EntityManager, p: Prepared): Promise<void> {
    switch (p.type) {
      case 'SESSION_CREATED': {
        const channel = p.payload.channel ?? p.payload.harnessId ?? harnessOfSessionId(p.payload.sessionId);
        const agent = await this.agentFor(m, p.payload);
        await this.opts.memory.upsertConversations(m, [{ sessionKey: p.payload.sessionId, agent, channel, taskId: p.payload.taskId }]);
        return;
      }
      case 'TRANSCRIPT_APPENDED': {
        if (!p.entries.length) return;
        const agent = await this.agentFor(m, p.payload);
        const channel = p.payload.channel ?? p.payload.harnessId ?? harnessOfSessionId(p.payload.sessionId);
        const entries: MemoryEntry[] = p.entries.map((e) => ({
          sessionId: p.payload.sessionId,
          agent,
          channel,
          taskId: p.payload.taskId,
          role: e.role,
          content: e.content,
          toolCalls: e.toolCalls ?? null,
          metadata: e.metadata ?? null,
          dedupeKey: e.id,
          createdAt: validDate(e.createdAt),
        }));
        await this.opts.memory.appendMany(entries, m);
        return;
      }
      case 'SESSION_UPDATED':
        if (p.payload.previousSessionId) await this.opts.memory.linkRotation(m, p.payload.sessionId, p.payload.previousSessionId);
        return;
      case 'IGNORED':
        return;
    }
  }
}
