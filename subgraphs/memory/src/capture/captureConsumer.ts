import { DurableConsumer, type DurableConsumerOptions } from '@keelson/platform';
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
import type { EntityManager } from 'typeorm';
import { clipContent, type MemoryEntry } from '../memory/memory.input';
import type { MemoryService } from '../memory/memory.service';
import { transcriptEntrySchema, type CapturedTranscriptEntry, type TranscriptSource } from './transcriptSource';

export interface CaptureConsumerOptions extends Omit<DurableConsumerOptions, 'name' | 'stream'> {
  memory: MemoryService;
  source: TranscriptSource;
  /** The cursor's name: replicas sharing it share the work, exactly once. @default memory-capture */
  name?: string;
  /** @default harness */
  stream?: string;
  /** Bound on one transcript fetch. @default 10000 */
  fetchTimeoutMs?: number;
}

type Prepared =
  | { type: 'SESSION_CREATED'; payload: SessionCreatedPayload }
  | { type: 'TRANSCRIPT_APPENDED'; payload: TranscriptAppendedPayload; entries: CapturedTranscriptEntry[] }
  | { type: 'SESSION_UPDATED'; payload: SessionUpdatedPayload }
  | { type: 'IGNORED' };

/** The transcript source's answer caps a request at this many ids. */
const IDS_PER_FETCH = 1000;

const ROLE = /^[a-z][a-z0-9_-]{0,31}$/;

/** Normalizes an entry: a lowercase role (`other` when it is no role name), content capped. */
function normalize(e: CapturedTranscriptEntry): CapturedTranscriptEntry {
  const role = e.role.trim().toLowerCase();
  return { ...e, role: ROLE.test(role) ? role : 'other', content: clipContent(e.content) };
}

/** A usable timestamp, or null (the append then stamps now). */
function validDate(value: Date | string | null | undefined): Date | null {
  if (value == null) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

/**
 * Capture: tails the `harness` stream and stores every session's transcript in memory under its
 * canonical SessionId, exactly once (see DurableConsumer for the batch and cursor contract).
 *
 * Bodies are fetched by id through the TranscriptSource, once per session per batch; the messages,
 * conversations and rotation breadcrumbs then commit with the cursor. Dedupe keys are the native
 * message ids, so a replay of the same entries stores nothing.
 */
export class CaptureConsumer extends DurableConsumer<Prepared[]> {
  private readonly fetchTimeoutMs: number;

  constructor(private readonly opts: CaptureConsumerOptions) {
    super({ ...opts, name: opts.name ?? 'memory-capture', stream: opts.stream ?? streams.harness });
    this.fetchTimeoutMs = opts.fetchTimeoutMs ?? 10_000;
  }

  /** Validates each event and fetches the bodies the batch names; a malformed event is logged and skipped. */
  protected async prepare(events: readonly EventEnvelope[]): Promise<Prepared[]> {
    const parsed = events.map((e) => this.parse(e));
    const wanted = new Map<string, Set<string>>();
    for (const p of parsed) {
      if (p.type !== 'TRANSCRIPT_APPENDED') continue;
      const ids = wanted.get(p.payload.sessionId) ?? new Set<string>();
      for (const id of p.payload.entryIds) ids.add(id);
      wanted.set(p.payload.sessionId, ids);
    }
    const fetched = new Map<string, Map<string, CapturedTranscriptEntry>>();
    for (const [sessionId, ids] of wanted) fetched.set(sessionId, await this.fetch(sessionId, [...ids]));
    return parsed.map((p) => {
      if (p.type !== 'TRANSCRIPT_APPENDED') return p;
      const byId = fetched.get(p.payload.sessionId)!;
      const missing = p.payload.entryIds.filter((id) => !byId.has(id));
      if (missing.length) this.opts.log.warn({ sessionId: p.payload.sessionId, missing }, 'transcript entries named by an event were not found');
      const seen = new Set<string>();
      const entries = p.payload.entryIds.flatMap((id) => {
        const entry = byId.get(id);
        if (!entry || seen.has(id)) return [];
        seen.add(id);
        return [entry];
      });
      return { ...p, entries };
    });
  }

  protected async apply(m: EntityManager, prepared: Prepared[]): Promise<void> {
    for (const p of prepared) await this.applyOne(m, p);
  }

  private parse(event: EventEnvelope): Prepared {
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
        return r.success ? { type: 'TRANSCRIPT_APPENDED', payload: r.data, entries: [] } : malformed(r.error.issues);
      }
      default:
        return { type: 'IGNORED' };
    }
  }

  /** The session's entries with these ids, by id; malformed entries are logged and left out. */
  private async fetch(sessionId: string, ids: readonly string[]): Promise<Map<string, CapturedTranscriptEntry>> {
    const byId = new Map<string, CapturedTranscriptEntry>();
    for (let i = 0; i < ids.length; i += IDS_PER_FETCH) {
      const signal = AbortSignal.any([this.abort.signal, AbortSignal.timeout(this.fetchTimeoutMs)]);
      const fetched = await this.opts.source.entries(sessionId, ids.slice(i, i + IDS_PER_FETCH), signal);
      for (const raw of fetched) {
        const r = transcriptEntrySchema.safeParse(raw);
        if (r.success) byId.set(r.data.id, normalize(r.data));
        else this.opts.log.warn({ sessionId, issues: r.error.issues }, 'skipping a malformed transcript entry');
      }
    }
    return byId;
  }

  /** The payload's agent, else the agent the session's conversation already has, else the harness. */
  private async agentFor(m: EntityManager, p: SessionCreatedPayload): Promise<string> {
    return p.agent ?? (await this.opts.memory.agentOfSession(m, p.sessionId)) ?? p.harnessId ?? harnessOfSessionId(p.sessionId);
  }

  private async applyOne(m: EntityManager, p: Prepared): Promise<void> {
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
