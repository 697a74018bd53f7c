import { byId, IDEMPOTENCY_KEY } from '@keelson/platform';
import { requireHarnessId, type HarnessId } from '@keelson/harness';
import { parseInput, RequiresScope } from '@keelson/kit';
import { MeshError } from '@keelson/schema';
import { Arg, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import { sessionsLoaders, type SessionsContext } from '../context';
import { Project, Run } from '../federation/stubs.type';
import { harnessOf } from '../harness/harness.resolver';
import { Harness } from '../harness/harness.type';
import { optionalUuidSchema, turnTextSchema } from '../session/session.input';
import { HarnessSession, toSession } from '../session/session.type';
import { Task, toTask } from './task.type';

@Resolver(() => Task)
export class TaskResolver {
  @RequiresScope('read')
  @Query(() => Task, { nullable: true })
  async task(@Ctx() ctx: SessionsContext, @Arg('id', () => ID) id: string): Promise<Task | null> {
    const t = await sessionsLoaders(ctx).task.load(id);
    return t ? toTask(t) : null;
  }

  @RequiresScope('operate')
  @Mutation(() => Task, {
    description: "Runs the harness headless on the prompt in the project's root, as the Temporal workflow harnessTask. CAPABILITY_UNSUPPORTED (with the reason) where the harness has no task executor.",
  })
  async runTask(
    @Ctx() ctx: SessionsContext,
    @Arg('harnessId', () => ID) harnessId: string,
    @Arg('prompt', () => String) prompt: string,
    @Arg('projectId', () => ID, { nullable: true }) projectId?: string | null,
    @Arg('idempotencyKey', () => String, { nullable: true, description: IDEMPOTENCY_KEY }) idempotencyKey?: string | null,
  ): Promise<Task> {
    const id = requireHarnessId(harnessId);
    const executor = await ctx.services.plane.taskExecutor(id);
    if (!executor.implemented) {
      throw new MeshError('CAPABILITY_UNSUPPORTED', `runTask is not supported for ${id}: ${executor.reason}`, { harnessId: id, capability: 'taskExecutor' });
    }
    const text = parseInput(turnTextSchema, prompt, 'prompt');
    const project = parseInput(optionalUuidSchema, projectId, 'projectId');
    const call = { caller: ctx.caller, mutation: 'runTask', key: idempotencyKey, input: { harnessId: id, prompt: text, projectId: project ?? null } };
    const taskById = byId(async (taskId) => {
      const [record] = await ctx.services.plane.store.tasksByIds([taskId]);
      return record ? toTask(record) : null;
    });
    return ctx.services.idempotency.run(call, taskById, async () => toTask(await ctx.services.tasks.runTask(id, text, project)));
  }

  @FieldResolver(() => Harness)
  harness(@Root() t: Task): Harness {
    return harnessOf(t.harnessId as HarnessId);
  }

  @FieldResolver(() => HarnessSession, { nullable: true, description: 'The session the task runs in (known from the start where the harness pins ids, else once the CLI announced it).' })
  async session(@Root() t: Task, @Ctx() ctx: SessionsContext): Promise<HarnessSession | null> {
    if (!t.sessionId) return null;
    const view = await sessionsLoaders(ctx).session.load(t.sessionId);
    return view ? toSession(view) : null;
  }

  @FieldResolver(() => Run, { description: "The task's run: its harnessTask workflow (id = temporalWorkflowId)." })
  run(@Root() t: Task): Run {
    return Object.assign(new Run(), { id: t.temporalWorkflowId });
  }

  @FieldResolver(() => Project, { nullable: true })
  project(@Root() t: Task): Project | null {
    return t.projectId ? Object.assign(new Project(), { id: t.projectId }) : null;
  }

  @FieldResolver(() => String, { nullable: true, description: 'The workflow in the Temporal Web UI, when its URL is configured.' })
  temporalUiUrl(@Root() t: Task, @Ctx() ctx: SessionsContext): string | null {
    return ctx.services.tasks.uiUrl(t.temporalWorkflowId, t.temporalRunId);
  }
}
