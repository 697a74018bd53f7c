import { RequiresScope } from '@keelson/kit';
import { capabilityNames, HARNESS_IDS, isHarnessId, type HarnessId } from '@keelson/harness';
import { Arg, Ctx, FieldResolver, ID, Query, Resolver, Root } from 'type-graphql';
import { sessionsLoaders, type SessionsContext } from '../context';
import { Harness, HarnessCapabilities, TaskExecutorInfo } from './harness.type';

const displayNames: Record<HarnessId, string> = {
  'claude-code': 'Claude Code',
  'grok-build': 'Grok Build',
  'kimi-code': 'Kimi Code',
  hermes: 'Hermes',
  codex: 'Codex',
  opencode: 'opencode',
  pi: 'pi',
  'qwen-code': 'Qwen Code',
};

/** The Harness object of an id. */
export function harnessOf(id: HarnessId, _from?: unknown): Harness {
  return Object.assign(new Harness(), { id, displayName: displayNames[id] });
}

@Resolver(() => Harness)
export class HarnessResolver {
  @RequiresScope('read')
  @Query(() => [Harness], { description: 'The eight harnesses, in the seed\'s order, with capabilities computed now.' })
  harnesses(): Harness[] {
    return HARNESS_IDS.map((id) => harnessOf(id));
  }

  @RequiresScope('read')
  @Query(() => Harness, { nullable: true, description: 'One harness by id (null for an id that is not one of the eight).' })
  harness(@Arg('id', () => ID) id: string): Harness | null {
    return isHarnessId(id) ? harnessOf(id) : null;
  }

  @FieldResolver(() => Boolean, { description: "Whether the CLI's binary is on this node (the pinned npm package, else PATH)." })
  async installed(@Root() h: Harness, @Ctx() ctx: SessionsContext): Promise<boolean> {
    return (await sessionsLoaders(ctx).report.load(h.id as HarnessId)).installed;
  }

  @FieldResolver(() => String, { nullable: true, description: "The CLI's version when installed from npm." })
  async version(@Root() h: Harness, @Ctx() ctx: SessionsContext): Promise<string | null> {
    return (await sessionsLoaders(ctx).report.load(h.id as HarnessId)).version;
  }

  @FieldResolver(() => HarnessCapabilities)
  async capabilities(@Root() h: Harness, @Ctx() ctx: SessionsContext): Promise<HarnessCapabilities> {
    const report = await sessionsLoaders(ctx).report.load(h.id as HarnessId);
    return Object.assign(new HarnessCapabilities(), {
      ...report.flags,
      reasons: capabilityNames.filter((c) => !report.flags[c]).map((capability) => ({ capability, reason: report.reasons[capability] ?? 'unavailable' })),
    });
  }

  @FieldResolver(() => [String], {
    description:
      "Models a session or turn may name (startSession's and sendUserTurn's `model`): the configured one first, then the CLI's own aliases. opencode and pi run only the models their config declares; the others pass any id to the provider.",
  })
  models(@Root() h: Harness, @Ctx() ctx: SessionsContext): string[] {
    return ctx.services.plane.drivers[h.id as HarnessId].models();
  }

  @FieldResolver(() => [String], { description: "Reasoning efforts a session or turn may name, by the CLI's own flag; empty when it takes none (naming one is then CAPABILITY_UNSUPPORTED)." })
  efforts(@Root() h: Harness, @Ctx() ctx: SessionsContext): string[] {
    return [...ctx.services.plane.drivers[h.id as HarnessId].efforts];
  }

  @FieldResolver(() => TaskExecutorInfo, { description: 'Whether runTask can run this harness, and why not.' })
  async taskExecutor(@Root() h: Harness, @Ctx() ctx: SessionsContext): Promise<TaskExecutorInfo> {
    return Object.assign(new TaskExecutorInfo(), await sessionsLoaders(ctx).executor.load(h.id as HarnessId));
  }
}
