import type { SnapshotRecord } from '@keelson/host';
import { JSONScalar, parseInput, RequiresScope } from '@keelson/kit';
import { cursorSchema, MeshError } from '@keelson/schema';
import { Arg, Ctx, FieldResolver, Mutation, Query, Resolver, Root, Subscription } from 'type-graphql';
import { ribsLoaders, versionRef, type RibsContext } from '../context';
import { frameKeysSchema, snapshotKeySchema } from '../inputs';
import { watched } from '../runs/liveKeys';
import { SnapshotFrameStream } from './snapshotFrames';
import { Snapshot, SnapshotFrame } from './snapshot.type';

function toSnapshot(record: SnapshotRecord): Snapshot {
  return Object.assign(new Snapshot(), {
    key: record.key,
    version: record.version,
    payload: record.payload,
    composedAt: new Date(record.composedAt),
    ribId: record.ribId,
    cursor: record.cursor ?? null,
  });
}

@Resolver(() => SnapshotFrame)
export class SnapshotResolver {
  @RequiresScope('read')
  @Query(() => Snapshot, { nullable: true, description: 'The latest version of a key; null until it is first composed (composers are lazy: call recomposeSnapshot).' })
  async snapshot(@Ctx() ctx: RibsContext, @Arg('key', () => String) key: string): Promise<Snapshot | null> {
    const record = await ribsLoaders(ctx).latestSnapshot.load(parseInput(snapshotKeySchema, key, 'key'));
    return record ? toSnapshot(record) : null;
  }

  @RequiresScope('write')
  @Mutation(() => Snapshot, {
    description:
      "Compose a key now and publish a new version (also streamed by snapshotFrames). NOT_FOUND when no composer is registered; UPSTREAM_FAILED when the composer threw or the rib's validator rejected the payload (the prior version stands).",
  })
  async recomposeSnapshot(@Ctx() ctx: RibsContext, @Arg('key', () => String) key: string): Promise<Snapshot> {
    const parsed = parseInput(snapshotKeySchema, key, 'key');
    const outcome = await ctx.services.host.recomposeSnapshot(parsed);
    switch (outcome.status) {
      case 'published':
        return toSnapshot(outcome.frame);
      case 'unregistered':
        throw new MeshError('NOT_FOUND', `no composer is registered under '${parsed}'`, { outcome: 'unregistered' });
      case 'rejected':
        throw new MeshError('UPSTREAM_FAILED', `the payload composed for '${parsed}' failed the rib's validator and was dropped; the prior version stands: ${outcome.error}`, {
          outcome: 'rejected',
        });
      case 'failed':
        throw new MeshError('UPSTREAM_FAILED', `composing '${parsed}' failed; the prior version stands: ${outcome.error}`, { outcome: 'failed' });
    }
  }

  @RequiresScope('read')
  @Subscription(() => SnapshotFrame, {
    description:
      'Every new version of these keys, in publication order. Without `after`: the latest version of each key first, then live. With `after` (the last cursor you saw): everything since, then live, with nothing missed or repeated.',
    subscribe: ({ args, context }) => {
      const keys = parseInput(frameKeysSchema, args.keys, 'keys');
      const after = parseInput(cursorSchema.nullish(), args.after, 'after');
      const { snapshots, events, liveKeys } = (context as RibsContext).services;
      const stream = new SnapshotFrameStream(snapshots, events, new Set(keys), after);
      // A subscriber makes its keys live: their region heartbeat runs at the region's cadence.
      return liveKeys ? watched(stream, liveKeys.watch(keys)) : stream;
    },
  })
  snapshotFrames(
    @Root() frame: SnapshotFrame,
    @Arg('keys', () => [String]) _keys: string[],
    @Arg('after', () => String, { nullable: true }) _after?: string | null,
  ): SnapshotFrame {
    return frame;
  }

  @FieldResolver(() => JSONScalar, { nullable: true, description: 'The version\'s payload; null when the version has since been pruned (read `snapshot(key)` for the current one).' })
  async payload(@Root() frame: SnapshotFrame, @Ctx() ctx: RibsContext): Promise<unknown> {
    if (frame.loaded !== undefined) return frame.loaded?.payload ?? null;
    return (await ribsLoaders(ctx).snapshotVersion.load(versionRef(frame.key, frame.version)))?.payload ?? null;
  }

  @FieldResolver(() => Date, { nullable: true, description: 'When the rib composed the payload; null when the version has been pruned.' })
  async composedAt(@Root() frame: SnapshotFrame, @Ctx() ctx: RibsContext): Promise<Date | null> {
    const composedAt = frame.loaded !== undefined ? frame.loaded?.composedAt : (await ribsLoaders(ctx).snapshotVersion.load(versionRef(frame.key, frame.version)))?.composedAt;
    return composedAt ? new Date(composedAt) : null;
  }
}
