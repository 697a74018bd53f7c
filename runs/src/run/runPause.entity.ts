import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A run file the gate's prompt names (`$ARTIFACTS_DIR/<path>`), as the pause recorded it. */
export interface PauseArtifact {
  path: string;
  text?: string | null;
  truncated?: boolean | null;
  error?: string | null;
}

/** One pause of a run on an approval gate, with its one decision. */
@Entity('run_pauses')
export class RunPause {
  @PrimaryColumn('text', { name: 'pause_id' })
  pauseId!: string;

  @Column('uuid', { name: 'run_id' })
  runId!: string;

  @Column('text', { name: 'node_id' })
  nodeId!: string;

  @Column('int')
  launch!: number;

  @Column('text')
  prompt!: string;

  @Column('jsonb')
  artifacts!: PauseArtifact[];

  @Column('timestamptz', { name: 'opened_at' })
  openedAt!: Date;

  @Column('timestamptz', { name: 'closed_at', nullable: true })
  closedAt!: Date | null;

  @Column('text', { name: 'closed_by', nullable: true })
  closedBy!: string | null;

  @Column('text', { nullable: true })
  decision!: string | null;

  @Column('timestamptz', { name: 'answered_at', nullable: true })
  answeredAt!: Date | null;
}
