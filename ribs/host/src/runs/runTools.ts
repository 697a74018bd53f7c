import type { ToolContext, ToolDefinition } from '@keelson/ribs-contract';
import { z } from 'zod';
import { errorMessage } from '../errors';
import type { RunsPort, RunsPortEvent, RunsPortOp, RunsPortRun } from './runsPort';

/** The host's generic run tools (family `run`): they reach any run or op by id, over chat and MCP. */
export const RUN_TOOL_NAMES = ['run_status', 'run_events', 'run_cancel', 'run_steer'] as const;

const idSchema = z.strictObject({ id: z.string().min(1).max(200) });
const eventsSchema = z.strictObject({
  id: z.string().min(1).max(200),
  after: z.string().regex(/^\d+$/, 'a cursor from an earlier answer').optional(),
  limit: z.number().int().min(1).max(200).optional(),
});
const steerSchema = z.strictObject({ id: z.string().min(1).max(200), note: z.string().min(1).max(16 * 1024) });

function reply(ctx: ToolContext, content: string, isError = false): void {
  ctx.emit({ type: 'tool_result', toolUseId: '', content, ...(isError ? { isError: true } : {}) });
}

function runView(run: RunsPortRun) {
  return {
    kind: 'run',
    id: run.id,
    workflowName: run.workflowName,
    status: run.status,
    launch: run.launch,
    error: run.error,
    pendingApproval: run.status === 'PAUSED' && run.pendingApproval ? { nodeId: run.pendingApproval.nodeId, pauseId: run.pendingApproval.pauseId, prompt: run.pendingApproval.prompt } : null,
    nodes: run.nodes.map((n) => ({ id: n.id, type: n.type, status: n.status, ...(n.error ? { error: n.error } : {}) })),
  };
}

function opView(op: RunsPortOp) {
  return { kind: 'op', id: op.id, opKind: op.kind, title: op.title, status: op.status, steerable: op.steerable, result: op.result ?? null, error: op.error };
}

function eventLines(events: RunsPortEvent[]): string {
  if (events.length === 0) return 'no events after that cursor';
  return events.map((e) => `${e.cursor} ${e.at} ${e.type} ${JSON.stringify(e.payload)}`).join('\n');
}

/**
 * `run_status`, `run_events`, `run_cancel`, `run_steer`: generic tools over every run and durable
 * op (seed 000 `registerOp`: "the generic run_* tools reach it over chat + MCP"). They are the host's,
 * registered before any rib's so no rib can claim a `run_` name, and like every tool they pass the
 * policy engine. Failures are `isError` results, never throws.
 */
export function runTools(runs: () => RunsPort | undefined): ToolDefinition[] {
  const withRuns = async (ctx: ToolContext, body: (port: RunsPort) => Promise<string>) => {
    const port = runs();
    if (!port) return reply(ctx, 'runs are not available yet (the runs domain is starting); retry shortly', true);
    try {
      const text = await body(port);
      if (!ctx.abortSignal.aborted) reply(ctx, text);
    } catch (err) {
      if (!ctx.abortSignal.aborted) reply(ctx, errorMessage(err), true);
    }
  };
  const find = async (port: RunsPort, id: string): Promise<{ run?: RunsPortRun; op?: RunsPortOp }> => {
    const run = await port.get(id);
    if (run) return { run };
    const op = await port.op(id);
    if (op) return { op };
    throw new Error(`no run or op ${JSON.stringify(id)}`);
  };

  /** A tool over one run or op by `input.id`: the answer is given what the id names. */
  const runTool = <I extends { id: string }>(
    def: Pick<ToolDefinition<I>, 'name' | 'description' | 'inputSchema' | 'state_changing'>,
    answer: (input: I, port: RunsPort, found: { run?: RunsPortRun; op?: RunsPortOp }) => Promise<string>,
  ): ToolDefinition<I> => ({
    ...def,
    execute: (input, ctx) => withRuns(ctx, async (port) => answer(input, port, await find(port, input.id))),
  });

  const status = runTool(
    {
      name: 'run_status',
      description: 'Status of a workflow run or a durable op by id: status, pending approval (with its pauseId), nodes; for an op its kind, result or error.',
      inputSchema: idSchema,
    },
    async (_input, _port, { run, op }) => JSON.stringify(run ? runView(run) : opView(op!), null, 2),
  );
  const events = runTool(
    {
      name: 'run_events',
      description: 'Events of a run (transitions) or frames of an op (log, progress, steers, the end), oldest first, one per line starting with its cursor; pass the last cursor as `after` to read on.',
      inputSchema: eventsSchema,
    },
    async (input, port, { run }) => {
      const limit = input.limit ?? 50;
      return eventLines(run ? await port.runEvents(input.id, input.after, limit) : await port.opFrames(input.id, input.after, limit));
    },
  );
  const cancel = runTool(
    {
      name: 'run_cancel',
      description: 'Cancel a live run or op by id (running commands are killed, an op\'s signal aborts).',
      inputSchema: idSchema,
      state_changing: true,
    },
    async (input, port, { run }) => {
      if (run) {
        const answer = await port.cancel(input.id);
        if (!answer.ok) throw new Error(answer.error);
        return `run ${input.id} is being cancelled`;
      }
      const op = await port.cancelOp(input.id);
      return `op ${op.id} is ${op.status === 'CANCELLED' ? 'cancelled' : 'being cancelled'}`;
    },
  );
  const steer = runTool(
    {
      name: 'run_steer',
      description: 'Send a steering note to a running steerable op (it reaches the op\'s onSteer). Runs are steered by answering their approval gates instead.',
      inputSchema: steerSchema,
      state_changing: true,
    },
    async (input, port, { run }) => {
      if (run) throw new Error(`${input.id} is a run: runs take no steering notes; answer its approval gate (respondToRun) instead`);
      const op = await port.steerOp(input.id, input.note);
      return `note sent to op ${op.id}`;
    },
  );
  return [status, events, cancel, steer] as ToolDefinition[];
}
