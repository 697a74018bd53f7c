import type { RunNodeStatus } from '@keelson/schema';
import { Field, Int, ObjectType } from 'type-graphql';
import { Column, Entity, PrimaryColumn } from 'typeorm';
import { RunNodeStatusEnum } from './run.enums';

/** One node of a run: its status and its stored (size-capped) output. */
@ObjectType({ description: 'One node of a run.' })
@Entity('run_nodes')
export class RunNode {
  @PrimaryColumn('uuid', { name: 'run_id' })
  runId!: string;

  @Field({ description: 'The node id from the definition.' })
  @PrimaryColumn('text', { name: 'node_id' })
  id!: string;

  /** Definition order. */
  @Column('int')
  position!: number;

  @Field({ description: 'prompt, bash, script, approval or cancel.' })
  @Column('text')
  type!: string;

  @Field(() => [String])
  @Column('text', { name: 'depends_on', array: true })
  dependsOn!: string[];

  @Field(() => RunNodeStatusEnum)
  @Column('text')
  status!: RunNodeStatus;

  @Field(() => Int, { description: 'Attempts so far (Temporal retries and lost workers included).' })
  @Column('int')
  attempt!: number;

  @Field(() => String, { nullable: true, description: 'stdout and stderr interleaved (the last 64 KiB), the turn\'s text, or the approval answer.' })
  @Column('text', { nullable: true })
  output!: string | null;

  @Field(() => String, {
    nullable: true,
    description:
      "A prompt node's prompt as its turn was sent: placeholders and $ARTIFACTS_DIR filled in. Null for other nodes and until the turn starts.",
  })
  @Column('text', { nullable: true })
  prompt!: string | null;

  @Field(() => Int, { description: 'Bytes the node produced in all.' })
  @Column('bigint', { name: 'output_bytes', transformer: { to: (v: number) => v, from: (v: string) => Number(v) } })
  outputBytes!: number;

  @Field({ description: 'True when only the tail of the output is kept.' })
  @Column('boolean', { name: 'output_truncated' })
  outputTruncated!: boolean;

  @Field(() => Int, { nullable: true })
  @Column('int', { name: 'exit_code', nullable: true })
  exitCode!: number | null;

  @Field(() => String, { nullable: true })
  @Column('text', { nullable: true })
  error!: string | null;

  @Field(() => Date, { nullable: true })
  @Column('timestamptz', { name: 'started_at', nullable: true })
  startedAt!: Date | null;

  @Field(() => Date, { nullable: true })
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
