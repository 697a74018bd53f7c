// @keelson/platform: what every domain stands on. A module with an index of its own (confine, sandbox,
// git) is re-exported whole; the others by name below.
export * from './confine';
export {
  listProcesses,
  findOwnedProcesses,
  ownsProcess,
  carriesRun,
  processArgv,
  isAlive,
  signalGroup,
  endProcessGroup,
  processStartTicks,
  setSupervisorOwner,
  supervisorName,
  findOrphanGroups,
  endOrphanGroups,
} from './process/ownedProcesses';
export type { ProcessInfo, OrphanGroup } from './process/ownedProcesses';
export { isExecutable, findExecutable } from './process/executables';
// The process sandbox (bubblewrap) and what a sandboxed child inherits.
export * from './sandbox';

// The hardened git runner (every git process the mesh starts) and the clone-URL rules.
export * from './git';
export { createDataSource, initializeAndMigrate, QueryCounter, withMaintenanceConnection } from './data/dataSource';
export type { DataSourceOptions, MeshDataSource } from './data/dataSource';
export { sqlMigration, orderedEntityKey } from './data/sqlMigration';
export type { SqlMigration, SqlRunner } from './data/sqlMigration';
export { openDomainState } from './data/domainState';
export type { DomainState, DomainStateOptions } from './data/domainState';
export { EventLog, appendEvent, notifyStreamChange } from './eventLog/eventLog';
export type { NewEvent, ReadOptions } from './eventLog/eventLog';
export { EventNotifier } from './eventLog/notifier';
export { followStream } from './eventLog/followStream';
export type { StreamReader } from './eventLog/followStream';
export type { Ticket, NotifierOptions } from './eventLog/notifier';
export { platformMigrations } from './eventLog/eventLog.migration';
export { cursorTableSql, moveCursorsToPlatform, restoreCursorsFromPlatform } from './eventLog/cursorTables';
export { DurableConsumer } from './eventLog/durableConsumer';
export type { DurableConsumerOptions } from './eventLog/durableConsumer';
export { IdempotencyKeys, IDEMPOTENCY_KEY, idempotencyKeySchema, inputHash, byId, whole } from './idempotency/idempotency';
export type { IdempotencyOptions, IdempotentCall, ResultCodec } from './idempotency/idempotency';
export { projectWorkflowsDir, WORKFLOW_FILE_EXTENSIONS, workflowFileNames, workflowsDigest, workflowsDigestOf } from './workflows/projectWorkflows';
export { AuditLog, AUDIT_STREAM, auditKinds } from './audit/auditLog';
export type { AuditSink, AuditRecord, AuditPayload, AuditKind } from './audit/auditLog';
export { rows, pgText, clip } from './data/sql';
