import { startSwarmInputSchema, type StartSwarmInput } from '@keelson/schema';
import type { RibContext, ToolContext, ToolDefinition } from '@keelson/ribs-contract';
import { z } from 'zod';
import type { ServerSummary, SwarmOperatorApi, SwarmSummary } from '../operator/operatorApi';

/** The operator's tools (the chat agent's and a workflow's): never granted to swarm agents. */
export const OPERATOR_TOOL_NAMES = [
  'chat_swarm_start',
  'chat_swarm_status',
  'chat_swarm_wait',
  'chat_swarm_stop',
  'chat_swarm_transcript',
  'chat_server_start',
  'chat_server_stop',
  'chat_server_reset',
] as const;

/** Longest `chat_swarm_wait` waits in one call. */
export const WAIT_MAX_S = 600;

const reply = (ctx: ToolContext, content: string, isError = false) => ctx.emit({ type: 'tool_result', toolUseId: '', content, ...(isError ? { isError: true } : {}) });
const idSchema = z.string().uuid('a swarm id');

/** One swarm in a few lines. */
export function describeSwarm(s: SwarmSummary): string {
  const lines = [`swarm ${s.id}: ${s.status}, ${s.turnsUsed} turn(s); op ${s.op.id}; channel #${s.channel.name}${s.channel.webUrl ? ` (${s.channel.webUrl})` : ''}`];
  lines.push(`task: ${s.task.split('\n')[0]!.slice(0, 200)}`);
  for (const a of s.agents) lines.push(`- @${a.handle}${a.lead ? ' (lead)' : ''}: ${a.status.toLowerCase()}, ${a.turns} turn(s)${a.inboxDepth ? `, ${a.inboxDepth} waiting` : ''}${a.finished ? ', done' : ''}`);
  if (s.conclusion) lines.push(`conclusion: ${s.conclusion}`);
  if (s.error) lines.push(`why it ended: ${s.error}`);
  return lines.join('\n');
}

function describeServer(s: ServerSummary): string {
  return `bus ${s.mode}${s.url ? ` at ${s.url}` : ''}: ${s.running ? 'running' : 'not running'}${s.version ? `, ${s.version}` : ''}; ${s.liveSwarms} live swarm(s)${s.reason ? `; ${s.reason}` : ''}`;
}

/** Wraps a tool's body: it runs against the swarms service as `api`, and a throw reads as an error result naming the tool. */
type OperatorRun = <I>(name: string, body: (input: I, ctx: ToolContext, api: SwarmOperatorApi) => Promise<string>) => ToolDefinition<I>['execute'];

/** The `OperatorRun` of `apiFor`: every call reaches the swarms service as the turn's originating caller (ctx.caller). */
function operatorRun(apiFor: (caller?: ToolContext['caller']) => SwarmOperatorApi): OperatorRun {
  return (name, body) => async (input, ctx) => {
    try {
      reply(ctx, await body(input, ctx, apiFor(ctx.caller)));
    } catch (err) {
      reply(ctx, `${name}: ${(err as Error).message}`, true);
    }
  };
}

/** `chat_swarm_start`: starts a swarm and returns at once. */
function swarmStartTool(run: OperatorRun, refreshBoard: () => void): ToolDefinition<StartSwarmInput> {
  return {
    name: 'chat_swarm_start',
    description:
      'Start a swarm: a lead agent (and named workers) working on the task in a ClickClack channel. Supply evidence (issue bodies, diffs, check results) verbatim: the swarm never fetches. Returns at once with the swarm and op ids.',
    inputSchema: startSwarmInputSchema as unknown as z.ZodType<StartSwarmInput>,
    state_changing: true,
    execute: run('chat_swarm_start', async (input, _ctx, api) => {
      const s = await api.start(input);
      refreshBoard();
      return `${describeSwarm(s)}\nFollow it with chat_swarm_wait or chat_swarm_status; watch and speak in ClickClack${s.channel.webUrl ? ` at ${s.channel.webUrl}` : ''}.`;
    }),
  };
}

/** `chat_swarm_status`: one swarm, or every live one. */
function swarmStatusTool(run: OperatorRun): ToolDefinition<{ swarmId?: string }> {
  return {
    name: 'chat_swarm_status',
    description: 'One swarm\'s status (agents, turns, conclusion), or every live swarm without swarmId.',
    inputSchema: z.strictObject({ swarmId: idSchema.optional() }),
    execute: run('chat_swarm_status', async (input, _ctx, api) => {
      if (input.swarmId) {
        const s = await api.get(input.swarmId);
        if (!s) throw new Error(`no swarm ${input.swarmId}`);
        return describeSwarm(s);
      }
      const live = await api.live();
      return live.length ? live.map(describeSwarm).join('\n\n') : 'No swarm is running.';
    }),
  };
}

/** `chat_swarm_wait`: waits (bounded) until a swarm ends, then reports it. */
function swarmWaitTool(run: OperatorRun): ToolDefinition<{ swarmId: string; timeoutS?: number }> {
  return {
    name: 'chat_swarm_wait',
    description: `Wait until a swarm ends (or timeoutS passes, at most ${WAIT_MAX_S} s, default 120), then report it.`,
    inputSchema: z.strictObject({ swarmId: idSchema, timeoutS: z.number().int().min(1).max(WAIT_MAX_S).optional() }),
    execute: run('chat_swarm_wait', async (input, ctx, api) => {
      const deadline = Date.now() + (input.timeoutS ?? 120) * 1000;
      for (;;) {
        const s = await api.get(input.swarmId);
        if (!s) throw new Error(`no swarm ${input.swarmId}`);
        if (s.status !== 'RUNNING') return describeSwarm(s);
        if (Date.now() >= deadline || ctx.abortSignal.aborted) return `still running after the wait:\n${describeSwarm(s)}`;
        await new Promise((r) => setTimeout(r, 1000));
      }
    }),
  };
}

/** `chat_swarm_stop`: stops a running swarm. */
function swarmStopTool(run: OperatorRun, refreshBoard: () => void): ToolDefinition<{ swarmId: string; reason?: string }> {
  return {
    name: 'chat_swarm_stop',
    description: 'Stop a running swarm (its turns are interrupted and every token it held is revoked).',
    inputSchema: z.strictObject({ swarmId: idSchema, reason: z.string().max(500).optional() }),
    state_changing: true,
    execute: run('chat_swarm_stop', async (input, _ctx, api) => {
      const s = await api.stop(input.swarmId, input.reason);
      refreshBoard();
      return `stopping: ${describeSwarm(s)}`;
    }),
  };
}

/** `chat_swarm_transcript`: the swarm's conversation from the bus. */
function swarmTranscriptTool(run: OperatorRun): ToolDefinition<{ swarmId: string; limit?: number }> {
  return {
    name: 'chat_swarm_transcript',
    description: 'The swarm\'s conversation from the bus: each top-level message with its thread, oldest first.',
    inputSchema: z.strictObject({ swarmId: idSchema, limit: z.number().int().min(1).max(200).optional() }),
    execute: run('chat_swarm_transcript', async (input, _ctx, api) => {
      const who = (m: { author: { handle: string | null; displayName: string } }) => (m.author.handle ? `@${m.author.handle}` : m.author.displayName);
      const threads = await api.transcript(input.swarmId, input.limit ?? 50);
      if (!threads.length) return 'The channel is empty.';
      return threads.map((t) => [`${who(t.root)}: ${t.root.body}`, ...t.replies.map((r) => `  ↳ ${who(r)}: ${r.body}`)].join('\n')).join('\n\n');
    }),
  };
}

/** `chat_server_start`: starts (or adopts) the ClickClack the mesh runs. */
function serverStartTool(run: OperatorRun): ToolDefinition<Record<string, never>> {
  return {
    name: 'chat_server_start',
    description: 'Start (or adopt) the ClickClack the mesh runs itself. Refused for a server the mesh was pointed at (CLICKCLACK_URL / CLICKCLACK_TOKEN).',
    inputSchema: z.strictObject({}),
    state_changing: true,
    execute: run('chat_server_start', async (_input, _ctx, api) => describeServer(await api.startServer())),
  };
}

/** `chat_server_stop`: stops the ClickClack the mesh runs. */
function serverStopTool(run: OperatorRun): ToolDefinition<Record<string, never>> {
  return {
    name: 'chat_server_stop',
    description: 'Stop the ClickClack the mesh runs itself (refused while a swarm runs, and for a server the mesh was pointed at).',
    inputSchema: z.strictObject({}),
    state_changing: true,
    execute: run('chat_server_stop', async (_input, _ctx, api) => describeServer(await api.stopServer())),
  };
}

/** `chat_server_reset`: resets the ClickClack the mesh runs, only with `confirm: true`. */
function serverResetTool(run: OperatorRun): ToolDefinition<{ confirm?: boolean }> {
  return {
    name: 'chat_server_reset',
    description: 'Reset the ClickClack the mesh runs itself: stop it, delete its data directory (every identity, channel and message), start it fresh. Does nothing unless confirm is true. Refused for a server the mesh was pointed at.',
    inputSchema: z.strictObject({ confirm: z.boolean().optional() }),
    state_changing: true,
    requires_confirmation: true,
    execute: run('chat_server_reset', async (input, _ctx, api) => {
      if (input.confirm !== true) {
        const s = await api.server();
        return `Nothing was reset. ${describeServer(s)}. Resetting deletes every identity, channel and message of this server: call chat_server_reset again with confirm: true to do it.`;
      }
      return `reset: ${describeServer(await api.resetServer(true))}`;
    }),
  };
}

/**
 * The operator tools of seed 001: thin wrappers over the swarms service (the same operations as
 * GraphQL's startSwarm, swarm, stopSwarm, Swarm.messages and the server mutations). `chat_server_reset`
 * takes a `confirm` input, because a slash command must not mutate state.
 */
export function operatorTools(apiFor: (caller?: ToolContext['caller']) => SwarmOperatorApi, ribCtx?: RibContext): ToolDefinition[] {
  const refreshBoard = () => void ribCtx?.getSnapshotManager?.().recompose('swarm').catch(() => undefined);
  const run = operatorRun(apiFor);
  return [
    swarmStartTool(run, refreshBoard),
    swarmStatusTool(run),
    swarmWaitTool(run),
    swarmStopTool(run, refreshBoard),
    swarmTranscriptTool(run),
    serverStartTool(run),
    serverStopTool(run),
    serverResetTool(run),
  ] as ToolDefinition[];
}
