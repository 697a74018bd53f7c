import { byId, IDEMPOTENCY_KEY } from '@keelson/platform';
import { JSONScalar, parseInput, RequiresScope, SteerResult, steerResult } from '@keelson/kit';
import type { RunStatus, WorkflowDefinition } from '@keelson/schema';
import type { Run, RunNode, RunPause } from '@keelson/runs';
import { Arg, Ctx, FieldResolver, ID, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import { pageArgsSchema, pageOf } from '@keelson/kit';
import { runsLoaders, runsPageKey, type RunsContext } from '../context';
import { toRunEvent } from '../event/runEvent.map';
import { RunEventConnection } from '../event/runEvent.type';
import { Project } from '../federation/project.type';
import { Rib } from '../federation/rib.type';
import { RunType } from './run.type';
import { RunStatusEnum } from './run.enums';
import { CancelRunResult, PendingApproval, RespondToRunResult, RunArtifactView, RunCheckout, RunConnection } from './run.types';
import { RunNodeType } from './runNode.type';

function toPending(p: RunPause): PendingApproval {
  return Object.assign(new PendingApproval(), {
    nodeId: p.nodeId,
    prompt: p.prompt,
    pauseId: p.pauseId,
    openedAt: p.openedAt,
    artifacts: (p.artifacts ?? []).map((a) =>
      Object.assign(new RunArtifactView(), { path: a.path, text: a.text ?? null, truncated: a.truncated ?? null, error: a.error ?? null }),
    ),
  });
}

@Resolver(() => RunType)
export class RunResolver {
  @RequiresScope('read')
  @Query(() => RunType, { nullable: true })
  run(@Ctx() ctx: RunsContext, @Arg('id', () => ID) id: string): Promise<Run | null> {
    return runsLoaders(ctx).run.load(id);
  }

  @RequiresScope('read')
  @Query(() => RunConnection, { description: 'Runs, newest first.' })
  runs(
    @Ctx() ctx: RunsContext,
    @Arg('status', () => RunStatusEnum, { nullable: true }) status?: RunStatus | null,
    @Arg('workflowName', () => String, { nullable: true }) workflowName?: string | null,
    @Arg('first', () => Int, { nullable: true }) first?: number | null,
    @Arg('after', () => String, { nullable: true }) after?: string | null,
  ): Promise<RunConnection> {
    return ctx.services.runs.page({ status, workflowName }, parseInput(pageArgsSchema, { first, after }));
  }

  @RequiresScope('operate')
  @Mutation(() => RunType, {
    description: 'Starts a catalog workflow (resolved in the project\'s scope when projectId is given) and returns the run once its workflow started.',
  })
  startWorkflow(
    @Ctx() ctx: RunsContext,
    @Arg('name') name: string,
    @Arg('inputs', () => JSONScalar, { nullable: true, description: 'String inputs: { "<name>": "<value>" }.' }) inputs?: unknown,
    @Arg('projectId', () => ID, { nullable: true }) projectId?: string | null,
    @Arg('idempotencyKey', () => String, { nullable: true, description: IDEMPOTENCY_KEY }) idempotencyKey?: string | null,
  ): Promise<Run> {
    const args = { name, inputs: inputs as Record<string, string> | null, projectId };
    const call = { caller: ctx.caller, mutation: 'startWorkflow', key: idempotencyKey, input: args };
    return ctx.services.idempotency.run(call, byId(async (id) => (await ctx.services.runs.byIds([id]))[0] ?? null), () => ctx.services.runs.start(args));
  }

  @RequiresScope('operate')
  @Mutation(() => RespondToRunResult, {
    description: 'Answers an approval gate: "approve" or feedback, at most 16 KiB. Pass the pendingApproval\'s pauseId so a late answer cannot resolve a later pause.',
  })
  respondToRun(
    @Ctx() ctx: RunsContext,
    @Arg('runId', () => ID) runId: string,
    @Arg('nodeId') nodeId: string,
    @Arg('text') text: string,
    @Arg('pauseId', () => String, { nullable: true }) pauseId?: string | null,
  ): Promise<RespondToRunResult> {
    return ctx.services.runs.respond({ runId, nodeId, text, pauseId });
  }

  @RequiresScope('operate')
  @Mutation(() => CancelRunResult, { description: 'Cancels a live run; running commands are killed within the heartbeat timeout.' })
  cancelRun(@Ctx() ctx: RunsContext, @Arg('runId', () => ID) runId: string): Promise<CancelRunResult> {
    return ctx.services.runs.cancel(runId);
  }

  @RequiresScope('operate')
  @Mutation(() => SteerResult, {
    description:
      'A steer note for a running prompt node (seed 002\'s /steer): its turn reads it after its current tool round, before its next model call. REJECTED with the reason when the run or node is not running or the node is not a prompt node; the same key is one note.',
  })
  async steerRun(
    @Ctx() ctx: RunsContext,
    @Arg('runId', () => ID) runId: string,
    @Arg('nodeId') nodeId: string,
    @Arg('note') note: string,
    @Arg('key', () => String, { nullable: true, description: 'A caller key: a retry with the same key is the same note (at most 128 characters).' }) key?: string | null,
  ): Promise<SteerResult> {
    const answer = await ctx.services.runs.steerNode(runId, nodeId, note, key);
    return steerResult(answer.status, answer.reason);
  }

  @RequiresScope('operate')
  @Mutation(() => RunType, { description: 'Relaunches a FAILED or CANCELLED run from its first incomplete node, with the same run id.' })
  resumeRun(@Ctx() ctx: RunsContext, @Arg('runId', () => ID) runId: string): Promise<Run> {
    return ctx.services.runs.resume(runId);
  }

  @FieldResolver(() => [RunNodeType], { description: 'Every node, in definition order.' })
  nodes(@Root() run: Run, @Ctx() ctx: RunsContext): Promise<RunNode[]> {
    return runsLoaders(ctx).nodesOfRun.load(run.id);
  }

  @FieldResolver(() => PendingApproval, { nullable: true, description: 'The oldest open gate of a PAUSED run.' })
  async pendingApproval(@Root() run: Run, @Ctx() ctx: RunsContext): Promise<PendingApproval | null> {
    const [first] = await runsLoaders(ctx).openPausesOfRun.load(run.id);
    return first ? toPending(first) : null;
  }

  @FieldResolver(() => [PendingApproval], { description: 'Every open gate (parallel branches can wait on several).' })
  async pendingApprovals(@Root() run: Run, @Ctx() ctx: RunsContext): Promise<PendingApproval[]> {
    return (await runsLoaders(ctx).openPausesOfRun.load(run.id)).map(toPending);
  }

  @FieldResolver(() => RunCheckout, {
    nullable: true,
    description: 'Where the run works. worktreeEstablished is false for an in-place run (path is its working directory) and for a worktree that could not be leased.',
  })
  checkout(@Root() run: Run): RunCheckout {
    const c = run.checkoutRecord;
    if (c) return Object.assign(new RunCheckout(), { path: c.path, branch: c.branch, worktreeEstablished: c.worktreeEstablished });
    const wantsWorktree = (run.definition as WorkflowDefinition | null)?.worktree?.enabled === true;
    return Object.assign(new RunCheckout(), { path: wantsWorktree ? null : run.cwd, branch: null, worktreeEstablished: false });
  }

  @FieldResolver(() => String, { nullable: true, description: 'The run\'s page in the Temporal Web UI.' })
  temporalUiUrl(@Root() run: Run, @Ctx() ctx: RunsContext): string | null {
    return ctx.services.runs.temporalUiUrl(run.temporalWorkflowId);
  }

  @FieldResolver(() => Project, { nullable: true })
  project(@Root() run: Run): Project | null {
    return run.projectId ? Object.assign(new Project(), { id: run.projectId }) : null;
  }

  @FieldResolver(() => Rib, { nullable: true, description: 'The rib whose workflow this is.' })
  rib(@Root() run: Run): Rib | null {
    return run.ribId ? Object.assign(new Rib(), { id: run.ribId }) : null;
  }

  @FieldResolver(() => RunEventConnection, { description: 'The run\'s transitions, oldest first (the same cursors runEvents resumes from).' })
  async events(
    @Root() run: Run,
    @Ctx() ctx: RunsContext,
    @Arg('first', () => Int, { nullable: true }) first?: number | null,
    @Arg('after', () => String, { nullable: true }) after?: string | null,
  ): Promise<RunEventConnection> {
    const args = parseInput(pageArgsSchema, { first, after });
    const events = await runsLoaders(ctx).runEvents.load(runsPageKey(run.id, args));
    return pageOf(events.map(toRunEvent), args.first, (e) => e.cursor);
  }
}
