import { Field, ObjectType } from 'type-graphql';
import { PageInfo } from '@keelson/kit';
import type { Run } from '@keelson/runs';
import { RunType } from './run.type';

/** A run file an approval prompt names as `$ARTIFACTS_DIR/<path>`. */
@ObjectType('RunArtifact', { description: 'A run file the gate\'s prompt names as $ARTIFACTS_DIR/<path>: up to 4, each cut to 32,000 characters.' })
export class RunArtifactView {
  @Field({ description: 'Relative to $ARTIFACTS_DIR.' })
  path!: string;

  @Field(() => String, { nullable: true })
  text?: string | null;

  @Field(() => Boolean, { nullable: true, description: 'True when cut to 32,000 characters.' })
  truncated?: boolean | null;

  @Field(() => String, { nullable: true, description: 'Why the file could not be read (then text is null).' })
  error?: string | null;
}

@ObjectType({ description: 'The human gate a paused run waits on. Pass pauseId to respondToRun so a late answer cannot resolve a later pause.' })
export class PendingApproval {
  @Field()
  nodeId!: string;

  @Field()
  prompt!: string;

  @Field()
  pauseId!: string;

  @Field(() => [RunArtifactView])
  artifacts!: RunArtifactView[];

  @Field(() => Date)
  openedAt!: Date;
}

@ObjectType({ description: 'The run\'s managed checkout. worktreeEstablished stays true after a finished run\'s worktree is cleaned up, when path and branch read null.' })
export class RunCheckout {
  @Field(() => String, { nullable: true })
  path!: string | null;

  @Field(() => String, { nullable: true })
  branch!: string | null;

  @Field()
  worktreeEstablished!: boolean;
}

@ObjectType({ description: 'The outcome of respondToRun: ok, or the reason the answer was rejected.' })
export class RespondToRunResult {
  @Field()
  ok!: boolean;

  @Field(() => String, { nullable: true })
  error!: string | null;

  @Field(() => String, { nullable: true, description: 'The pause the answer resolved.' })
  pauseId!: string | null;

  @Field(() => String, { nullable: true, description: '"approved" or "feedback".' })
  decision!: string | null;

  @Field({ description: 'True when this exact answer had already been recorded (idempotent repeat).' })
  duplicate!: boolean;
}

@ObjectType({ description: 'The outcome of cancelRun: ok once the cancel is requested, or why not.' })
export class CancelRunResult {
  @Field()
  ok!: boolean;

  @Field(() => String, { nullable: true })
  error!: string | null;
}

@ObjectType()
export class RunEdge {
  @Field({ description: 'Opaque; pass as `after` to continue after this run.' })
  cursor!: string;

  @Field(() => RunType)
  node!: Run;
}

@ObjectType({ description: 'A page of runs, newest first.' })
export class RunConnection {
  @Field(() => [RunEdge])
  edges!: RunEdge[];

  @Field(() => PageInfo)
  pageInfo!: PageInfo;
}
