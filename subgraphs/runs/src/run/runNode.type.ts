import type { RunNodeStatus } from '@keelson/schema';
import { Field, Int, ObjectType } from 'type-graphql';
import { RunNodeStatusEnum } from './run.enums';

/** One node of a run: its status and its stored (size-capped) output. */
@ObjectType('RunNode', { description: 'One node of a run.' })
export class RunNodeType {
  @Field({ description: 'The node id from the definition.' })
  id!: string;

  @Field({ description: 'prompt, bash, script, approval or cancel.' })
  type!: string;

  @Field(() => [String])
  dependsOn!: string[];

  @Field(() => RunNodeStatusEnum)
  status!: RunNodeStatus;

  @Field(() => Int, { description: 'Attempts so far (Temporal retries and lost workers included).' })
  attempt!: number;

  @Field(() => String, { nullable: true, description: 'stdout and stderr interleaved (the last 64 KiB), the turn\'s text, or the approval answer.' })
  output!: string | null;

  @Field(() => String, {
    nullable: true,
    description:
      "A prompt node's prompt as its turn was sent: placeholders and $ARTIFACTS_DIR filled in. Null for other nodes and until the turn starts.",
  })
  prompt!: string | null;

  @Field(() => Int, { description: 'Bytes the node produced in all.' })
  outputBytes!: number;

  @Field({ description: 'True when only the tail of the output is kept.' })
  outputTruncated!: boolean;

  @Field(() => Int, { nullable: true })
  exitCode!: number | null;

  @Field(() => String, { nullable: true })
  error!: string | null;

  @Field(() => Date, { nullable: true })
  startedAt!: Date | null;

  @Field(() => Date, { nullable: true })
  completedAt!: Date | null;
}
