import { Column, Entity, PrimaryColumn } from 'typeorm';

/** The current version of one snapshot key; its row lock orders concurrent appends to the key. */
@Entity('rib_snapshot_heads')
export class SnapshotHead {
  @PrimaryColumn('text')
  key!: string;

  @Column('text', { name: 'rib_id' })
  ribId!: string;

  @Column('integer')
  version!: number;
}

/** One retained version of a snapshot key, with the `snapshots` event that announced it. */
@Entity('rib_snapshot_versions')
export class SnapshotVersion {
  @PrimaryColumn('text')
  key!: string;

  @PrimaryColumn('integer')
  version!: number;

  @Column('text', { name: 'rib_id' })
  ribId!: string;

  @Column('jsonb')
  payload!: unknown;

  @Column('timestamptz', { name: 'composed_at' })
  composedAt!: Date;

  /** The `snapshots` stream sequence of this version's event. */
  @Column('bigint', { name: 'event_seq' })
  eventSeq!: string;
}
