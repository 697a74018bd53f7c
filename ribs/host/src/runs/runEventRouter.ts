import type { RibRunEvent, RibRunState } from '@keelson/ribs-contract';
import { errorMessage } from '../errors';
import type { RibHost } from '../ribHost';
import type { WarningSink } from '../warnings';
import type { BoundOutputs } from './boundOutputs';
import type { RunsPort } from './runsPort';

/** An event of the `runs` stream as the consumer reads it (key = run id). */
export interface RunStreamEvent {
  type: string;
  key: string;
  payload: { runId?: string; launch?: number; pauseId?: string; error?: string };
  at: Date | string;
}

/** The run-lifecycle events `onRunEvent` sees, by stream event type; `starterOnly` ones skip a rib that only owns the workflow. */
const lifecycle: Record<string, { status: RibRunState; starterOnly: boolean } | undefined> = {
  RUN_STARTED: { status: 'running', starterOnly: false },
  RUN_PAUSED: { status: 'paused', starterOnly: true },
  RUN_RESUMED: { status: 'running', starterOnly: true },
  RUN_SUCCEEDED: { status: 'succeeded', starterOnly: false },
  RUN_FAILED: { status: 'failed', starterOnly: false },
  RUN_CANCELLED: { status: 'cancelled', starterOnly: false },
};

/** True for the `runs` stream events the router acts on. */
export function isLifecycleEvent(type: string): boolean {
  return lifecycle[type] !== undefined;
}

/**
 * Turns the durable `runs` stream into `onRunEvent` deliveries (seed 000 hook 9): to the rib whose
 * workflow it is, `running` per launch and the terminal event; to the rib that started it, also
 * `paused` per opened gate and `running` once the last open gate is answered. Deliveries go through
 * the host's dispatcher (serialized per run, fail-soft) and are not awaited, so a slow hook holds
 * only its own run. A succeeded run of a snapshot-bound workflow is published to its key.
 */
export class RunEventRouter {
  constructor(
    private readonly deps: {
      host: () => RibHost | undefined;
      runs: () => RunsPort | undefined;
      bound: BoundOutputs;
      warn: WarningSink;
    },
  ) {}

  /** Routes one event; resolves once its deliveries are dispatched. Never rejects for a rib's failure. */
  async route(event: RunStreamEvent): Promise<void> {
    const kind = lifecycle[event.type];
    const host = this.deps.host();
    const runs = this.deps.runs();
    if (!kind || !host || !runs) return;
    const run = await runs.get(event.key);
    if (!run) return;
    if (event.type === 'RUN_SUCCEEDED') void this.deps.bound.publish(run);

    const recipients = new Set<string>();
    if (run.startedByRibId && host.ribIds.includes(run.startedByRibId)) recipients.add(run.startedByRibId);
    if (!kind.starterOnly && run.ribId && host.ribIds.includes(run.ribId)) recipients.add(run.ribId);
    if (recipients.size === 0) return;

    const terminal = kind.status === 'succeeded' || kind.status === 'failed' || kind.status === 'cancelled';
    let pendingApproval: RibRunEvent['pendingApproval'];
    if (kind.status === 'paused' && event.payload.pauseId) {
      const pause = await runs.pause(run.id, event.payload.pauseId);
      if (pause) pendingApproval = { nodeId: pause.nodeId, prompt: pause.prompt };
    }
    const at = typeof event.at === 'string' ? event.at : event.at.toISOString();
    const error = terminal ? (event.payload.error ?? run.error ?? undefined) : undefined;
    const delivered: RibRunEvent = {
      workflowName: run.workflowName,
      runId: run.id,
      status: kind.status,
      inputs: { ...run.inputs },
      startedAt: run.startedAt,
      ...(terminal ? { completedAt: run.completedAt ?? at } : {}),
      ...(error ? { error } : {}),
      ...(pendingApproval ? { pendingApproval } : {}),
      ...(run.startedByRibId ? { startedByRibId: run.startedByRibId } : {}),
    };
    for (const ribId of recipients) {
      host.deliverRunEvent(ribId, { ...delivered, inputs: { ...delivered.inputs } }).catch((err: unknown) =>
        this.deps.warn({ stage: 'runtime', rule: 'run-event', ribId, message: `could not deliver ${event.type} of run ${run.id}: ${errorMessage(err)}` }),
      );
    }
  }
}
