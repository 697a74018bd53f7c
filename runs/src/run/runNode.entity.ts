import type { RunNodeStatus } from '@keelson/schema';
import { Column, Entity, PrimaryColumn } from 'typeorm';

/** One node of a run: its status and its stored (size-capped) output. */
@Entity('run_nodes')
export class RunNode {
  @PrimaryColumn('uuid', { name: 'run_id' })
  runId!: string;

  @PrimaryColumn('text', { name: 'node_id' })
  id!: string;

  /** Definition order. */
  @Column('int')
  position!: number;

  @Column('text')
  type!: string;

  @Column('text', { name: 'depends_on', array: true })
  dependsOn!: string[];

  @Column('text')
  status!: RunNodeStatus;

  @Column('int')
  attempt!: number;

  @Column('text', { nullable: true })
  output!: string | null;

  @Column('text', { nullable: true })
  prompt!: string | null;

  @Column('bigint', { name: 'output_bytes', transformer: { to: (v: number) => v, from: (v: string) => Number(v) } })
  outputBytes!: number;

  @Column('boolean', { name: 'output_truncated' })
  outputTruncated!: boolean;

  @Column('int', { name: 'exit_code', nullable: true })
  exitCode!: number | null;

  @Column('text', { nullable: true })
  error!: string | null;

  @Column('timestamptz', { name: 'started_at', nullable: true })
  startedAt!: Date | null;

  @Column('timestamptz', { name: 'completed_at', nullable: true })
  completedAt!: Date | null;
}

/** A `run_nodes` row as Postgres returns it. */
export interface RunNodeRow {
  run_id: string;
  node_id: string;
  position: number;
  type: string;
  depends_on: string[];
  status: RunNodeStatus;
  attempt: number;
  output: string | null;
  prompt: string | null;
  output_bytes: string;
  output_truncated: boolean;
  exit_code: number | null;
  error: string | null;
  started_at: Date | null;
  completed_at: Date | null;
}

/** The entity of a raw row, as TypeORM would hydrate it, without its per-row metadata walk. */
export function runNodeFromRow(row: RunNodeRow): RunNode {
  const node = new RunNode();
  node.runId = row.run_id;
  node.id = row.node_id;
  node.position = row.position;
  node.type = row.type;
  node.dependsOn = row.depends_on;
  node.status = row.status;
  node.attempt = row.attempt;
  node.output = row.output;
  node.prompt = row.prompt;
  node.outputBytes = Number(row.output_bytes);
  node.outputTruncated = row.output_truncated;
  node.exitCode = row.exit_code;
  node.error = row.error;
  node.startedAt = row.started_at;
  node.completedAt = row.completed_at;
  return node;
}
