import { appendFile, mkdir, open, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { streams, type AuditPayload, type EventEnvelope } from '@keelson/schema';
import { DurableConsumer, type DurableConsumerOptions } from '../eventLog/durableConsumer';
import type { EventLog } from '../eventLog/eventLog';
import { auditRecordOf, type AuditRecord } from './auditLog';

/** Where the seed's dated audit files go: `<workspace>/.data/audit/`. */
export function auditDir(workspace: string): string {
  return join(workspace, '.data', 'audit');
}

/** The UTC day of a record: its file is `<day>.jsonl`. */
const dayOf = (record: AuditRecord) => record.at.slice(0, 10);

/** The sequence of the last record in a day's file (0 when there is none): its last line, read from the end. */
async function lastSeqIn(file: string): Promise<number> {
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
  try {
    const { size } = await handle.stat();
    const length = Math.min(size, 64 * 1024);
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, size - length);
    const lines = buffer.toString('utf8').split('\n').filter(Boolean);
    const last = lines[lines.length - 1];
    return last ? (JSON.parse(last) as { seq: number }).seq : 0;
  } finally {
    await handle.close();
  }
}

/**
 * Appends records to their day's file, each once: a record at or below the file's last sequence is
 * already there (a batch replayed after a crash writes nothing twice).
 */
export async function appendAuditRecords(dir: string, records: readonly AuditRecord[]): Promise<void> {
  if (records.length === 0) return;
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const byDay = new Map<string, AuditRecord[]>();
  for (const record of records) byDay.set(dayOf(record), [...(byDay.get(dayOf(record)) ?? []), record]);
  for (const [day, list] of byDay) {
    const file = join(dir, `${day}.jsonl`);
    const last = await lastSeqIn(file);
    const fresh = list.filter((r) => r.seq > last);
    if (fresh.length) await appendFile(file, fresh.map((r) => JSON.stringify(r)).join('\n') + '\n', { mode: 0o600 });
  }
}

/**
 * Rewrites one day's file whole from the log (`npm run audit -- export --date <day>`): every record
 * of that UTC day, in order. Returns how many it wrote.
 */
export async function exportAuditDay(events: EventLog, dir: string, day: string): Promise<{ file: string; records: number }> {
  const records: AuditRecord[] = [];
  for (let after = 0; ; ) {
    const page = (await events.read<AuditPayload>(streams.audit, after, { limit: 500 })) as EventEnvelope<AuditPayload>[];
    if (page.length === 0) break;
    for (const event of page) {
      const record = auditRecordOf(event);
      if (dayOf(record) === day) records.push(record);
    }
    after = page[page.length - 1]!.seq;
  }
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, `${day}.jsonl`);
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, records.map((r) => JSON.stringify(r) + '\n').join(''), { mode: 0o600 });
  await rename(temp, file);
  return { file, records: records.length };
}

/** Reads a day's file back (tests, tools). */
export async function readAuditDay(dir: string, day: string): Promise<AuditRecord[]> {
  const text = await readFile(join(dir, `${day}.jsonl`), 'utf8');
  return text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as AuditRecord);
}

/**
 * Writes the seed's dated JSONL continuously from the `audit` stream, from a durable cursor: each
 * record once, in order, also after a crash (the files are appended before the cursor commits, and
 * a replayed batch skips what its file already holds).
 */
export class AuditJsonlWriter extends DurableConsumer<AuditRecord[]> {
  constructor(
    opts: Omit<DurableConsumerOptions, 'stream' | 'name'>,
    private readonly dir: string,
  ) {
    super({ ...opts, name: 'audit-jsonl', stream: streams.audit, batchSize: 200 });
  }

  protected async prepare(events: readonly EventEnvelope[]): Promise<AuditRecord[]> {
    const records = (events as readonly EventEnvelope<AuditPayload>[]).map(auditRecordOf);
    await appendAuditRecords(this.dir, records);
    return records;
  }

  protected async apply(): Promise<void> {
    // The files were written in prepare; the batch commits the cursor.
  }
}
