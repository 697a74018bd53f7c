import { createLogger, type Logger } from '@keelson/service';
import type { ApprovalPort } from '../ports/approvalPort';
import type { RibHost, RibHostOptions } from '../ribHost';
import { createWarningSink, type WarningSink } from '../warnings';
import { BoundOutputs } from './boundOutputs';
import { LiveOps, type OpsPort } from './liveOps';
import { runApprovalPort } from './runApprovals';
import { RunEventRouter } from './runEventRouter';
import { createRunSeams } from './runSeams';
import type { RunsPort } from './runsPort';
import { runTools } from './runTools';

/** Options of {@link createRibRuns}. */
export interface RibRunsOptions {
  /** The runs domain; undefined until it is up (the seams answer SERVICE_UNAVAILABLE meanwhile). */
  runs: () => RunsPort | undefined;
  /** Where ops become durable in this process; undefined until it is up. */
  ops: () => OpsPort | undefined;
  /** The Keelson home (`runWorkflow`'s default cwd). */
  home: string;
  /** @default createLogger('rib-runs') */
  logger?: Logger;
  /** How long a policy `ask` waits for the operator at most. @default 300000 */
  approvalMaxWaitMs?: number;
}

/** A region the heartbeat refreshes. */
export interface RegionRefreshRequest {
  key: string;
  ribId: string;
  workflow?: string;
}

/** The run seams and what serves them, for one rib host. */
export interface RibRuns {
  /** Spread into `createRibHost`'s options: the seams, the `run_*` tools, policy `ask` → approval gates. */
  readonly hostOptions: Required<Pick<RibHostOptions, 'seams' | 'hostTools'>> & { approvals: ApprovalPort };
  /** Call once `createRibHost` resolved. */
  bind(host: RibHost): void;
  readonly liveOps: LiveOps;
  /** Turns `runs` stream events into `onRunEvent` deliveries (the ribs process's consumer feeds it). */
  readonly router: RunEventRouter;
  readonly bound: BoundOutputs;
  /**
   * One heartbeat tick of a region: re-run its workflow (started by no rib; the owner still gets its
   * events) and publish a succeeded run's output to the bound key, or recompose the key.
   */
  refreshRegion(req: RegionRefreshRequest, signal?: AbortSignal): Promise<void>;
}

/** Wires the run seams of seed 000 to a runs domain and a durable op store. */
export function createRibRuns(options: RibRunsOptions): RibRuns {
  const warn: WarningSink = createWarningSink(options.logger ?? createLogger('rib-runs'));
  let host: RibHost | undefined;
  const hostRef = () => host;
  const liveOps = new LiveOps(options.ops, warn);
  const bound = new BoundOutputs(hostRef, warn);
  const router = new RunEventRouter({ host: hostRef, runs: options.runs, bound, warn });
  const seams = createRunSeams({ host: hostRef, runs: options.runs, liveOps, bound, home: options.home, warn });
  return {
    hostOptions: {
      seams,
      hostTools: runTools(options.runs),
      approvals: runApprovalPort({ runs: options.runs, warn, ...(options.approvalMaxWaitMs ? { maxWaitMs: options.approvalMaxWaitMs } : {}) }),
    },
    bind(h) {
      host = h;
    },
    liveOps,
    router,
    bound,
    async refreshRegion(req, signal) {
      if (!host) throw new Error('the rib host is not bound');
      if (!req.workflow) {
        const outcome = await host.recomposeSnapshot(req.key);
        if (outcome.status === 'failed' || outcome.status === 'rejected') throw new Error(`recomposing ${req.key}: ${outcome.error}`);
        return;
      }
      const runs = options.runs();
      if (!runs) throw new Error('runs are not available yet');
      const { runId } = await runs.start({ name: req.workflow, startedByRibId: null });
      const run = await runs.settled(runId, signal);
      if (run.status === 'SUCCEEDED') await bound.publish(run);
      else throw new Error(`refresh run ${run.id} of '${req.workflow}' ${run.status}${run.error ? `: ${run.error}` : ''}`);
    },
  };
}
