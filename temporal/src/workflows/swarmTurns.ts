// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
// The swarm's turns: an agent joins (its bot identity made by an activity), a turn starts as a
// `swarmTurn` activity in the turn scope and settles into the run, and a settled turn's commands are
// applied (a spawn leasing a writer's worktree first).
import { workflowInfo } from '@temporalio/workflow';
import type { SwarmTurnInput } from '../activities/swarm/swarmTypes';
import type { SwarmCtx } from './swarmProxies';
import type { SwarmTurnCommand } from './swarmRun';
import { failureMessage, rosterLines, type AgentState, type CarriedSwarmState, type FinishedTurn, type SwarmWorkflowInput, type TurnBatch } from './swarmState';

/** The `swarmTurn` activity's input for a turn of agent `a`. */
export function swarmTurnInput(input: SwarmWorkflowInput, st: CarriedSwarmState, a: AgentState, t: TurnBatch): SwarmTurnInput {
  const channel = st.channel!;
  const { swarmId, limits } = input;
  const { turnNo, batch, background, notes, model } = t;
  return {
    swarmId,
    agentId: a.id,
    turnNo,
    workflowId: workflowInfo().workflowId,
    workspaceId: channel.workspaceId,
    channelId: channel.channelId,
    channelName: channel.channelName,
    botId: a.botId,
    tokenIds: [...a.tokenIds],
    messageIds: batch,
    background,
    notes,
    ...(a.sessionId ? { sessionId: a.sessionId } : {}),
    handle: a.handle,
    role: a.role,
    lead: a.lead,
    writer: a.writer,
    writeMode: input.writeMode,
    roster: rosterLines(st.agents),
    swarmTurnsLeft: limits.maxTurns - st.turnsUsed,
    agentTurnsLeft: limits.maxTurnsPerAgent - a.turns,
    turnTimeoutMs: limits.turnTimeoutS * 1000,
    ...(input.provider ? { provider: input.provider } : {}),
    ...(model ? { model } : {}),
    ...(input.projectRoot ? { cwd: input.projectRoot } : {}),
    workTools: input.workTools,
    ...(st.writeBase && input.projectId && input.projectRoot
      ? {
          write: {
            projectId: input.projectId,
            root: input.projectRoot,
            base: st.writeBase,
            ...(a.worktree ? { worktree: a.worktree } : {}),
            writers: Object.fromEntries(st.agents.filter((w) => w.worktree).map((w) => [w.id, w.worktree!.branch])),
            leadHandle: st.agents.find((x) => x.lead)?.handle ?? '',
          },
        }
      : {}),
  };
}

/** Makes agent `name`'s bot identity and adds it to the swarm. */
export async function addSwarmAgent(ctx: SwarmCtx, name: string, role: string, isLead: boolean, writer: boolean): Promise<void> {
  const { run } = ctx;
  const channel = run.st.channel!;
  const { handle, displayName } = run.identity(name);
  const made = await ctx.proxies.acts.swarmAddAgent({ swarmId: run.input.swarmId, workspaceId: channel.workspaceId, agentId: name, handle, displayName });
  run.join(name, role, isLead, writer, made);
}

/** Starts agent `a`'s turn activity; its result or error lands in `run.finished`. */
function startTurn(ctx: SwarmCtx, a: AgentState): void {
  const { run } = ctx;
  const { generation, ...t } = run.beginTurn(a);
  const { turnNo, batch, notes } = t;
  const running = ctx.turnScope
    .run(() => ctx.proxies.turnActs.swarmTurn(swarmTurnInput(run.input, run.st, a, t)))
    .then(
      (result) => {
        run.finished.push({ agentId: a.id, turnNo, generation, batch, notes, result });
      },
      (error: unknown) => {
        run.finished.push({ agentId: a.id, turnNo, generation, batch, notes, error });
      },
    );
  ctx.turnsInFlight.push(running);
}

/** Starts a turn for every idle agent with work, within the budgets; ends the swarm when the budgets are spent. */
export function pumpSwarmTurns(ctx: SwarmCtx): void {
  for (let a = ctx.run.nextTurn(); a; a = ctx.run.nextTurn()) startTurn(ctx, a);
}

/** Applies a settled turn, then (unless `ending`) the commands of a successful one. */
export async function settleSwarmTurn(ctx: SwarmCtx, f: FinishedTurn, ending = false): Promise<void> {
  const { agent, apply } = ctx.run.settleTurn(f, ending);
  if (!apply) return;
  for (const c of apply.commands) {
    if (c.kind === 'spawn') await spawn(ctx, agent, c);
    else ctx.run.applyCommand(agent, c);
  }
}

/** Agent `a`'s `chat_spawn`: refused, or a new agent (a writer gets its worktree leased first). */
async function spawn(ctx: SwarmCtx, a: AgentState, c: Extract<SwarmTurnCommand, { kind: 'spawn' }>): Promise<void> {
  const { run } = ctx;
  const refused = run.spawnRefusal(a, c);
  if (refused !== undefined) return run.refuseSpawn(a, c.name, refused);
  if (!c.writer) {
    await addSwarmAgent(ctx, c.name, c.role, false, false);
    return run.spawned(a, c.name);
  }
  let lease: Awaited<ReturnType<SwarmCtx['proxies']['leaseActs']['swarmLeaseWriter']>>;
  try {
    const { input, st } = run;
    lease = await ctx.proxies.leaseActs.swarmLeaseWriter({ swarmId: input.swarmId, projectId: input.projectId!, agentId: c.name, base: st.writeBase! });
  } catch (err) {
    return run.refuseSpawn(a, c.name, `no worktree for a writer: ${failureMessage(err)}`);
  }
  await addSwarmAgent(ctx, c.name, c.role, false, true);
  run.spawned(a, c.name, lease);
}
