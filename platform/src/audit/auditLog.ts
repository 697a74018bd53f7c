import { createHash } from 'node:crypto';
import { streams, type Actor, type AuditEventType, type AuditPayload, type EventEnvelope } from '@keelson/schema';
import type { DataSource } from 'typeorm';
import type { EventLog } from '../eventLog/eventLog';

/** JSON with object keys sorted at every depth: the same arguments always digest the same. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** The SHA-256 (hex) of the arguments' canonical JSON: what the audit log keeps of them. */
export function argsDigest(args: unknown): string {
  return createHash('sha256').update(canonicalJson(args ?? null)).digest('hex');
}

/** One entry to record. */
export interface AuditEntry {
  type: AuditEventType;
  operation: string;
  args: unknown;
  outcome: string;
  detail?: string;
  /** Who did it; null for the mesh's own work. */
  actor: Actor | null;
}

/** Records audit entries: what a gateway, a rib host or a script is given. */
export type AuditRecorder = (entry: AuditEntry) => Promise<void>;

/**
 * The audit log (seed 002) as events of the `audit` stream of the event log: append-only, one
 * table every replica writes and reads in the same order, resumable by cursor — `auditEvents(after)`
 * reads it, the identity subgraph writes the seed's dated JSONL from it. Entries carry a digest of
 * the arguments, never the arguments.
 */
export function auditRecorder(dataSource: DataSource, events: EventLog, service: string): AuditRecorder {
  return async (entry) => {
    const payload: AuditPayload = {
      operation: entry.operation.slice(0, 500),
      argsSha256: argsDigest(entry.args),
      outcome: entry.outcome.slice(0, 100),
      ...(entry.detail ? { detail: entry.detail.slice(0, 200) } : {}),
      service,
    };
    await dataSource.transaction((m) => events.append<AuditPayload>(m, { stream: streams.audit, key: payload.operation.slice(0, 200), type: entry.type, payload, actor: entry.actor }));
  };
}

/** One audit event as the JSONL file and `auditEvents` show it. */
export interface AuditRecord {
  seq: number;
  cursor: string;
  at: string;
  type: string;
  actor: Actor | null;
  operation: string;
  argsSha256: string;
  outcome: string;
  detail?: string;
  service: string;
}

export function auditRecordOf(event: EventEnvelope<AuditPayload>): AuditRecord {
  return {
    seq: event.seq,
    cursor: event.cursor,
    at: new Date(event.at).toISOString(),
    type: event.type,
    actor: event.actor ?? null,
    operation: event.payload.operation,
    argsSha256: event.payload.argsSha256,
    outcome: event.payload.outcome,
    ...(event.payload.detail ? { detail: event.payload.detail } : {}),
    service: event.payload.service,
  };
}
