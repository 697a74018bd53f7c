import { AUDIT_STREAM, DurableConsumer, type AuditPayload, type DurableConsumerOptions, type EventLog } from '@keelson/platform';
import type { EventEnvelope } from '@keelson/schema';
import { appendFileSync, closeSync, existsSync, fstatSync, mkdirSync, openSync, readSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** `<home>/.data/audit`: the seed's dated JSONL files (`<date>.jsonl`, UTC dates). */
export function auditDir(home: string): string {
  return join(home, '.data', 'audit');
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** An entry's day (UTC), the name of its file. */
function dayOf(e: EventEnvelope<AuditPayload>): string {
  return new Date(e.at).toISOString().slice(0, 10);
}

/** One JSONL line: the sequence first (files resume by it), then time, actor and the entry. */
export function auditLine(e: EventEnvelope<AuditPayload>): string {
  const { operation, argsDigest, outcome, service, surface, actorKey } = e.payload;
  return JSON.stringify({
    seq: e.seq,
    at: new Date(e.at).toISOString(),
    kind: e.type,
    operation,
    argsDigest,
    outcome,
    service,
    ...(surface ? { surface } : {}),
    actor: e.actor ? { ...e.actor, ...(actorKey ? { key: actorKey } : {}) } : null,
  });
}

/** The sequence on a file's last line (0 when the file is absent or empty): a file is written in order. */
function lastSeqIn(file: string): number {
  if (!existsSync(file)) return 0;
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    const length = Math.min(size, 64 * 1024);
    const buf = Buffer.alloc(length);
    readSync(fd, buf, 0, length, size - length);
    const last = buf.toString('utf8').trimEnd().split('\n').at(-1);
    const seq = last ? (JSON.parse(last) as { seq?: unknown }).seq : 0;
    return typeof seq === 'number' ? seq : 0;
  } catch {
    return 0;
  } finally {
    closeSync(fd);
  }
}

function byDay(events: readonly EventEnvelope<AuditPayload>[]): Map<string, EventEnvelope<AuditPayload>[]> {
  const days = new Map<string, EventEnvelope<AuditPayload>[]>();
  for (const e of events) {
    const day = dayOf(e);
    const list = days.get(day);
    if (list) list.push(e);
    else days.set(day, [e]);
  }
  return days;
}

/**
 * Appends entries to their days' files, skipping any a file already holds (its last line's
 * sequence): a batch replayed after a crash between the write and the cursor adds nothing twice.
 */
export function appendAuditLines(dir: string, events: readonly EventEnvelope<AuditPayload>[]): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const [day, entries] of byDay(events)) {
    const file = join(dir, `${day}.jsonl`);
    const after = lastSeqIn(file);
    const lines = entries.filter((e) => e.seq > after).map(auditLine);
    if (lines.length) appendFileSync(file, `${lines.join('\n')}\n`, { mode: 0o600 });
  }
}

/**
 * Keeps `<home>/.data/audit/<date>.jsonl` up to date from the audit stream, continuously, from a
 * durable cursor (it resumes where it stopped). The table is the truth; these files are its copy on
 * the disk of the process that owns it (the identity service), as the seed's audit logger writes them.
 */
export class AuditJsonlWriter extends DurableConsumer<void> {
  constructor(
    base: Omit<DurableConsumerOptions, 'name' | 'stream'>,
    private readonly dir: string,
  ) {
    super({ ...base, name: 'audit-jsonl', stream: AUDIT_STREAM, batchSize: base.batchSize ?? 200 });
  }

  protected async prepare(events: readonly EventEnvelope[]): Promise<void> {
    appendAuditLines(this.dir, events as EventEnvelope<AuditPayload>[]);
  }

  protected async apply(): Promise<void> {
    // The files were written in prepare; only the cursor commits here.
  }
}

/**
 * Rewrites the dated files from the table (`npm run audit -- export [--date YYYY-MM-DD]`): every day,
 * or one. Each file is written whole to a temporary name and renamed over the old one.
 * @returns the files written and the entries in them
 */
export async function exportAudit(events: EventLog, dir: string, date?: string): Promise<{ files: string[]; entries: number }> {
  if (date !== undefined && !DATE.test(date)) throw new Error(`--date must be YYYY-MM-DD, got '${date}'`);
  const days = new Map<string, string[]>();
  let entries = 0;
  for (let after = 0; ; ) {
    const page = await events.read<AuditPayload>(AUDIT_STREAM, after, { limit: 1000 });
    if (!page.length) break;
    for (const e of page) {
      const day = dayOf(e);
      if (date !== undefined && day !== date) continue;
      const lines = days.get(day);
      if (lines) lines.push(auditLine(e));
      else days.set(day, [auditLine(e)]);
      entries++;
    }
    after = page.at(-1)!.seq;
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const files: string[] = [];
  for (const [day, lines] of [...days].sort(([a], [b]) => a.localeCompare(b))) {
    const file = join(dir, `${day}.jsonl`);
    writeFileSync(`${file}.tmp`, `${lines.join('\n')}\n`, { mode: 0o600 });
    renameSync(`${file}.tmp`, file);
    files.push(file);
  }
  return { files, entries };
}
