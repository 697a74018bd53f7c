import { cursorSchema, isUuid, MeshError, streams, type EventEnvelope, type RunEventPayload } from '@keelson/schema';
import { parseInput, RequiresScope } from '@keelson/kit';
import { Arg, Ctx, FieldResolver, ID, Resolver, Root, Subscription } from 'type-graphql';
import { runsLoaders, type RunsContext } from '../context';
import type { Run } from '@keelson/runs';
import { RunType } from '../run/run.type';
import { toRunEvent } from './runEvent.map';
import { RunEvent } from './runEvent.type';

@Resolver(() => RunEvent)
export class RunEventResolver {
  @RequiresScope('read')
  @Subscription(() => RunEvent, {
    description: 'Run transitions in order: one run (runId) or all. Pass the last cursor you saw as `after` to resume with nothing missed.',
    subscribe: async ({ args, context }) => {
      const ctx = context as RunsContext;
      const after = parseInput(cursorSchema.nullish(), args.after, 'after');
      const runId = args.runId as string | null | undefined;
      if (runId != null) {
        if (!isUuid(runId) || !(await runsLoaders(ctx).run.load(runId))) throw new MeshError('NOT_FOUND', `run ${JSON.stringify(runId)} does not exist`);
        return ctx.services.events.tail(streams.runs, after, { key: runId });
      }
      return ctx.services.events.tail(streams.runs, after);
    },
  })
  runEvents(
    @Root() event: EventEnvelope<RunEventPayload>,
    @Arg('runId', () => ID, { nullable: true }) _runId?: string | null,
    @Arg('after', () => String, { nullable: true }) _after?: string | null,
  ): RunEvent {
    return toRunEvent(event);
  }

  @FieldResolver(() => RunType, { nullable: true, description: 'The run as it is now.' })
  run(@Root() event: RunEvent, @Ctx() ctx: RunsContext): Promise<Run | null> {
    return runsLoaders(ctx).run.load(event.runId);
  }
}
