import type { RunStatus } from '@keelson/schema';
import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A durable long-running op (the `durableOp` Temporal workflow). */
@Entity('ops')
export class Op {
  @PrimaryColumn('uuid')
  id!: string;

  @Column({ type: 'bigint', insert: false, update: false })
  seq!: string;

  @Column('text')
  kind!: string;

  @Column('text', { nullable: true })
  title!: string | null;

  @Column('jsonb', { nullable: true })
  input!: unknown;

  @Column('text')
  status!: RunStatus;

  @Column('jsonb', { nullable: true })
  result!: unknown;

  @Column('text', { nullable: true })
  error!: string | null;

  @Column('boolean')
  steerable!: boolean;

  @Column('text', { name: 'rib_id', nullable: true })
  ribId!: string | null;

  @Column('uuid', { name: 'project_id', nullable: true })
  projectId!: string | null;

  @Column('text', { name: 'temporal_workflow_id' })
  temporalWorkflowId!: string;

  @Column('timestamptz', { name: 'started_at' })
  startedAt!: Date;

  @Column('timestamptz', { name: 'completed_at', nullable: true })
  completedAt!: Date | null;
}
