import { createWarningSink, runApprovalPort, type ApprovalPort, type RunsPort, type RunsPortEvent, type RunsPortOp, type RunsPortRun } from '@keelson/host';
import { decodeCursor, isTerminalRunStatus, isUuid, MeshError, streams, type EventEnvelope, type RunEventPayload } from '@keelson/schema';
import type { Logger } from '@keelson/service';
import type { RunsServices } from './domain';
import { approvalKeyOf } from './store/runRecords';
import type { Op } from './op/op.entity';

const terminalEvents = new Set(['RUN_SUCCEEDED', 'RUN_FAILED', 'RUN_CANCELLED']);

/** The port's view of an op: these fields of its row. */
function opOf({ id, kind, title, status, result, error, steerable, ribId, projectId, temporalWorkflowId }: Op): RunsPortOp {
  return { id, kind, title, status, result, error, steerable, ribId, projectId, temporalWorkflowId };
}

function eventOf(e: EventEnvelope): RunsPortEvent {
  return { cursor: e.cursor, type: e.type, payload: (e.payload ?? {}) as Record<string, unknown>, at: new Date(e.at).toISOString() };
}

function aborted(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('aborted');
}

/** The port's view of a run: its row, nodes and open pause (undefined for an unknown or malformed id). */
async function runOf(services: RunsServices, runId: string): Promise<RunsPortRun | undefined> {
  if (!isUuid(runId)) return undefined;
  const [run] = await services.runs.byIds([runId]);
  if (!run) return undefined;
  const [nodes, pauses] = await Promise.all([services.runs.nodesOf([run.id]), services.runs.openPausesOf([run.id])]);
  const pause = pauses[0];
  const checkout = run.checkoutRecord;
  return {
    id: run.id,
    workflowName: run.workflowName,
    status: run.status,
    launch: run.launch,
    inputs: run.inputs,
    startedAt: new Date(run.startedAt).toISOString(),
    completedAt: run.completedAt ? new Date(run.completedAt).toISOString() : null,
    error: run.error,
    ribId: run.ribId,
    startedByRibId: run.startedByRibId,
    projectId: run.projectId,
    nodes: nodes.map((n) => ({ id: n.id, type: n.type, status: n.status, output: n.output, error: n.error })),
    pendingApproval: pause
      ? {
          nodeId: pause.nodeId,
          prompt: pause.prompt,
          pauseId: pause.pauseId,
          artifacts: (pause.artifacts ?? []).map((a) => ({
            path: a.path,
            ...(a.text != null ? { text: a.text } : {}),
            ...(a.truncated != null ? { truncated: a.truncated } : {}),
            ...(a.error != null ? { error: a.error } : {}),
          })),
        }
      : null,
    checkout: checkout ? { path: checkout.path, branch: checkout.branch, worktreeEstablished: checkout.worktreeEstablished } : null,
    temporalWorkflowId: run.temporalWorkflowId,
  };
}

/** The first of the run's own events (from its start) that `pick` takes; an abort rejects. */
async function untilRunEvent(
  services: RunsServices,
  runId: string,
  signal: AbortSignal | undefined,
  pick: (e: EventEnvelope<RunEventPayload>) => boolean,
): Promise<EventEnvelope<RunEventPayload> | undefined> {
  if (signal?.aborted) throw aborted(signal);
  const tail = services.events.tail<RunEventPayload>(streams.runs, undefined, { key: runId });
  const stop = () => void tail.return?.();
  signal?.addEventListener('abort', stop, { once: true });
  let found: EventEnvelope<RunEventPayload> | undefined;
  try {
    for await (const event of tail) {
      if (pick(event)) {
        found = event;
        break;
      }
    }
  } finally {
    signal?.removeEventListener('abort', stop);
    await tail.return?.();
  }
  if (signal?.aborted) throw aborted(signal);
  return found;
}

/** The port's op methods: an op's row and frames, and its cancel and steer. */
function opMethods(services: RunsServices): Pick<RunsPort, 'op' | 'opFrames' | 'cancelOp' | 'steerOp'> {
  return {
    async op(opId) {
      const [op] = await services.ops.byIds([opId]);
      return op ? opOf(op) : undefined;
    },
    async opFrames(opId, after, limit) {
      return (await services.events.read(streams.ops, decodeCursor(after), { key: opId, limit })).map(eventOf);
    },
    async cancelOp(opId) {
      return opOf(await services.ops.cancel(opId));
    },
    async steerOp(opId, note) {
      return opOf(await services.ops.steer(opId, note));
    },
  };
}

/**
 * The runs domain as the rib host reaches it (`RunsPort`), in-process: the runs domain's services (the
 * runs subgraph's under `npm start`, the ribs and worker processes' own in production), its `runs` /
 * `ops` streams and tables.
 */
export function runsPortOf(services: RunsServices): RunsPort {
  return {
    async start(req) {
      const run = await services.runs.start({ name: req.name, inputs: req.inputs, projectId: req.projectId, startedByRibId: req.startedByRibId });
      return { runId: run.id };
    },
    async startDefinition(req) {
      const run = await services.runs.startDefinition(req);
      return { runId: run.id };
    },
    get: (runId) => runOf(services, runId),
    async pause(runId, pauseId) {
      const rows = (await services.dataSource.query('SELECT node_id, prompt FROM run_pauses WHERE pause_id = $1 AND run_id::text = $2', [pauseId, runId])) as {
        node_id: string;
        prompt: string;
      }[];
      return rows[0] ? { nodeId: rows[0].node_id, prompt: rows[0].prompt } : undefined;
    },
    async gate(runId, signal) {
      const first = await runOf(services, runId);
      if (!first) throw new MeshError('NOT_FOUND', `run ${JSON.stringify(runId)} does not exist`);
      const launch = first.launch;
      const seen = await untilRunEvent(services, runId, signal, (e) => (e.payload.launch ?? 0) >= launch && (e.type === 'NODE_WAITING' || terminalEvents.has(e.type)));
      const pauseId = seen?.type === 'NODE_WAITING' ? seen.payload.pauseId : undefined;
      if (!pauseId) throw new MeshError('CONFLICT', `run ${runId} settled without waiting at a gate`);
      const [approval] = (await services.dataSource.query('SELECT id FROM approvals WHERE source_key = $1', [approvalKeyOf(pauseId)])) as { id: string }[];
      return { pauseId, approvalId: approval?.id ?? null };
    },
    async settled(runId, signal) {
      const first = await runOf(services, runId);
      if (!first) throw new MeshError('NOT_FOUND', `run ${JSON.stringify(runId)} does not exist`);
      if (isTerminalRunStatus(first.status)) return first;
      // A terminal event of this launch (or a later one) ends the wait.
      await untilRunEvent(services, runId, signal, (e) => terminalEvents.has(e.type) && (e.payload.launch ?? 0) >= first.launch);
      const settled = await runOf(services, runId);
      if (!settled) throw new MeshError('NOT_FOUND', `run ${JSON.stringify(runId)} does not exist`);
      return settled;
    },
    async cancel(runId) {
      const answer = await services.runs.cancel(runId);
      return answer.ok ? { ok: true } : { ok: false, error: answer.error ?? `run ${runId} could not be cancelled` };
    },
    async respond(req) {
      const answer = await services.runs.respond(req);
      return answer.ok ? { ok: true } : { ok: false, error: answer.error ?? 'the answer was rejected' };
    },
    async runEvents(runId, after, limit) {
      return (await services.events.read(streams.runs, decodeCursor(after), { key: runId, limit })).map(eventOf);
    },
    ...opMethods(services),
  };
}

/**
 * A `RunsPort` onto a runs domain opened later (its catalog reads a rib host, so the host comes
 * first): until `attach`, `port()` is undefined and the rib host's run seams answer SERVICE_UNAVAILABLE.
 */
export function lateRunsPort(): { port: () => RunsPort | undefined; attach(services: RunsServices): void } {
  let port: RunsPort | undefined;
  return {
    port: () => port,
    attach(services) {
      port = runsPortOf(services);
    },
  };
}

/**
 * The worker's approval channel: a policy `ask` about a tool a prompt node calls (run by the worker's
 * own rib host) becomes a `policy-approval` gate the operator answers, the same mechanism as the ribs
 * process's asks. Until `runs` answers a port, an ask rejects.
 */
export function workerApprovals(runs: () => RunsPort | undefined, log: Logger, maxWaitMs?: number): ApprovalPort {
  return runApprovalPort({ runs, warn: createWarningSink(log.child({ component: 'worker-approvals' })), ...(maxWaitMs ? { maxWaitMs } : {}) });
}
