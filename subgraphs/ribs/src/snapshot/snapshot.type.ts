import { JSONScalar } from '@keelson/kit';
import { Field, ID, Int, ObjectType } from 'type-graphql';

@ObjectType({ description: 'The latest stored version of a snapshot key.' })
export class Snapshot {
  @Field()
  key!: string;

  @Field(() => Int, { description: 'Starts at 1 and increases by one per published version.' })
  version!: number;

  @Field(() => JSONScalar, { nullable: true, description: 'The composed payload (validated by the rib before it was stored).' })
  payload!: unknown;

  @Field(() => Date, { nullable: true })
  composedAt!: Date | null;

  @Field(() => ID, { description: 'The rib that owns the key.' })
  ribId!: string;

  @Field(() => String, { nullable: true, description: 'The snapshotFrames cursor of this version: subscribe with `after` to follow on from it.' })
  cursor!: string | null;
}

@ObjectType({ description: 'A published snapshot version, as snapshotFrames streams it.' })
export class SnapshotFrame {
  @Field({ description: 'Opaque; pass as `after` to resume right after this frame.' })
  cursor!: string;

  @Field()
  key!: string;

  @Field(() => Int)
  version!: number;

  @Field(() => ID)
  ribId!: string;

  @Field(() => Date, { description: 'When the version was published.' })
  at!: Date;

  /** Known for frames read with their version; hydrated by (key, version) otherwise. */
  loaded?: { payload: unknown; composedAt: string } | null;
}
