import { actorOf, callerKey, type Actor, type Caller } from '@keelson/schema';
import { currentCaller, type Logger } from '@keelson/service';
import type { DataSource } from 'typeorm';
import { appendEvent } from '../eventLog/eventLog';
import { inputHash } from '../idempotency/idempotency';

/** The event log stream of the audit trail (key = the operation or tool name). */
export const AUDIT_STREAM = 'audit';

/** What an audit entry records: a GraphQL mutation a subgraph answered, or a rib tool a host ran. */
export const auditKinds = ['MUTATION', 'TOOL'] as const;
export type AuditKind = (typeof auditKinds)[number];

/** The payload of an `audit` event (time and actor are the event's own columns). */
export interface AuditPayload {
  operation: string;
  /** sha256 of the arguments' canonical JSON: what was asked, comparable, never the values themselves. */
  argsDigest: string;
  /** `OK`, or the error's code (`FORBIDDEN`, `CONFLICT`, a tool run's status such as `POLICY_DENIED`). */
  outcome: string;
  /** The process that recorded it (a subgraph's name, `worker`). */
  service: string;
  /** Tools: the policy surface the call came through (`workflow`, `mcp`, `chat`, …). */
  surface?: string;
  /** The caller's stable key (`token:<id>`, `jwt:<sub>`, `service:<name>`): two tokens with one name differ. */
  actorKey?: string;
}

/** One thing to record; `args` is digested, never stored. */
export interface AuditRecord {
  kind: AuditKind;
  operation: string;
  args: unknown;
  outcome: string;
  /** Who asked. @default the caller of the request being served */
  caller?: Pick<Caller, 'subject' | 'kind' | 'tokenId'> | null;
  surface?: string;
}

/** Where mutations and tool calls are recorded. `record` never throws and never delays its caller. */
export interface AuditSink {
  record(entry: AuditRecord): void;
  /** Waits for the records in flight. */
  flush(): Promise<void>;
}

/**
 * The audit trail in Postgres: one append-only event per mutation and tool call in the shared event
 * log's `audit` stream, so every replica writes to, and reads, one sequence. A write never holds the
 * answer it records (a hung database must not hang the API twice): it runs beside it, and an entry that
 * cannot be written is logged in full as an error record instead — the log line stands for it.
 */
export class AuditLog implements AuditSink {
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly dataSource: DataSource,
    private readonly log: Logger,
    private readonly service: string,
  ) {}

  record(entry: AuditRecord): void {
    const caller = entry.caller === undefined ? currentCaller() : entry.caller;
    const actor: Actor | null = caller ? actorOf(caller as Caller) : null;
    const payload: AuditPayload = {
      operation: entry.operation,
      argsDigest: inputHash(entry.args ?? null),
      outcome: entry.outcome,
      service: this.service,
      ...(entry.surface ? { surface: entry.surface } : {}),
      ...(caller ? { actorKey: callerKey(caller) } : {}),
    };
    const write = appendEvent(this.dataSource.manager, { stream: AUDIT_STREAM, key: entry.operation, type: entry.kind, payload, actor })
      .then(() => undefined)
      .catch((err: unknown) => this.log.error({ err, audit: { kind: entry.kind, actor, ...payload } }, 'audit entry not written to Postgres; this record stands for it'));
    this.pending.add(write);
    void write.finally(() => this.pending.delete(write));
  }

  /** Waits for the writes in flight (a stopping process flushes before it closes its pool). */
  async flush(): Promise<void> {
    await Promise.all([...this.pending]);
  }
}
