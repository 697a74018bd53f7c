import { describeZodError, MeshError, POLICY_APPROVAL_WORKFLOW, workflowDefinitionSchema } from '@keelson/schema';
import type { RibRunState, RibRunStatus, RibWorkflowRunResult } from '@keelson/ribs-contract';
import { isAbsolute } from 'node:path';
import { z } from 'zod';
import type { RibRunSeams } from '../context/buildRibContext';
import { errorMessage, parseOrBadInput } from '../errors';
import type { RibHost } from '../ribHost';
import type { WarningSink } from '../warnings';
import type { BoundOutputs } from './boundOutputs';
import type { LiveOps } from './liveOps';
import type { RunsPort, RunsPortRun } from './runsPort';

/** What the run seams reach; every getter is late-bound (the host and the runs domain boot after the seams exist). */
export interface RunSeamsDeps {
  host: () => RibHost | undefined;
  runs: () => RunsPort | undefined;
  liveOps: LiveOps;
  bound: BoundOutputs;
  /** `runWorkflow`'s default working directory. */
  home: string;
  warn: WarningSink;
}

const inputsSchema = z.record(z.string(), z.string({ error: 'input values are strings' }), { error: 'expected an object of string values' }).optional();
const nameSchema = z.string({ error: 'expected a workflow name' }).min(1, 'must not be empty').max(200);
const optsSchema = z.object({ projectId: z.string().min(1).optional() }).optional();

const terminal: readonly string[] = ['SUCCEEDED', 'FAILED', 'CANCELLED'];
const lower = (status: string) => status.toLowerCase() as RibRunState;

/** The seed's `RibRunStatus` of a run. */
export function ribRunStatus(run: RunsPortRun): RibRunStatus {
  return {
    runId: run.id,
    workflowName: run.workflowName,
    status: lower(run.status),
    ...(run.status === 'PAUSED' && run.pendingApproval
      ? { pendingApproval: { nodeId: run.pendingApproval.nodeId, prompt: run.pendingApproval.prompt, pauseId: run.pendingApproval.pauseId, artifacts: run.pendingApproval.artifacts } }
      : {}),
    checkout: run.checkout ?? { path: null, branch: null, worktreeEstablished: false },
    nodes: run.nodes.map((n) => ({ id: n.id, status: n.status.toLowerCase(), ...(n.output !== null ? { output: n.output } : {}), ...(n.error ? { error: n.error } : {}) })),
    ...(run.error ? { error: run.error } : {}),
  };
}

/** The seed's terminal `RibWorkflowRunResult` of a settled run. */
export function ribWorkflowRunResult(run: RunsPortRun): RibWorkflowRunResult {
  const nodes: RibWorkflowRunResult['nodes'] = {};
  for (const n of run.nodes) nodes[n.id] = { state: n.status.toLowerCase(), output: n.output ?? '', ...(n.error ? { error: n.error } : {}) };
  const status = run.status === 'SUCCEEDED' ? 'succeeded' : run.status === 'CANCELLED' ? 'cancelled' : 'failed';
  return { status, nodes, ...(run.error ? { error: run.error } : {}) };
}

const failed = (error: string): RibWorkflowRunResult => ({ status: 'failed', nodes: {}, error });

/** The host, or SERVICE_UNAVAILABLE while it is still activating. */
function needHost(deps: RunSeamsDeps): RibHost {
  const host = deps.host();
  if (!host) throw new MeshError('SERVICE_UNAVAILABLE', 'the rib host is still activating; call the run seams after activation');
  return host;
}

/** The runs domain, or SERVICE_UNAVAILABLE while it is starting. */
function needRuns(deps: RunSeamsDeps): RunsPort {
  const runs = deps.runs();
  if (!runs) throw new MeshError('SERVICE_UNAVAILABLE', 'runs are not available yet (the runs domain is starting); retry after readiness');
  return runs;
}

/** The policy engine's verdict on a rib's call, as the operator's tool `tool` would face it (an `ask` waits at most the cross-rib call timeout). */
async function policyVerdict(host: RibHost, ribId: string, tool: string, args: unknown) {
  return host.policies.evaluate({ phase: 'tool_call', tool, args, ribId }, { surface: 'rib', ribId }, AbortSignal.timeout(host.grants.callTimeoutMs));
}

/** The seams that launch runs: `startWorkflow` (a catalog workflow, granted and policy-checked) and `runWorkflow` (an inline definition, awaited). */
function launchSeams(deps: RunSeamsDeps, ribId: string): Pick<RibRunSeams, 'startWorkflow' | 'runWorkflow'> {
  return {
    async startWorkflow(name, inputs, opts) {
      const host = needHost(deps);
      const workflow = parseOrBadInput(nameSchema, name, 'name');
      // The operator's grant first: an ungranted rib is refused and no approval is asked.
      if (!host.grants.canStartWorkflow(ribId, workflow)) {
        throw new MeshError('FORBIDDEN', `rib '${ribId}' may not start workflow '${workflow}': no grant in ribWorkflowGrants or KEELSON_RIB_WORKFLOW_GRANTS`);
      }
      const given = parseOrBadInput(inputsSchema, inputs, 'inputs');
      const { projectId } = parseOrBadInput(optsSchema, opts, 'opts') ?? {};
      const verdict = await policyVerdict(host, ribId, 'workflow_run', { name: workflow, ...(given ? { inputs: given } : {}), ...(projectId ? { projectId } : {}) });
      if (verdict.outcome === 'deny') throw new MeshError('FORBIDDEN', `workflow_run ${workflow} denied by policy ${verdict.policyId}: ${verdict.reason}`);
      return needRuns(deps).start({ name: workflow, ...(given ? { inputs: given } : {}), ...(projectId ? { projectId } : {}), startedByRibId: ribId });
    },

    async runWorkflow(definition, inputs, opts) {
      try {
        const parsed = workflowDefinitionSchema.safeParse(definition);
        if (!parsed.success) return failed(`invalid workflow definition: ${describeZodError(parsed.error, 'definition')}`);
        if (parsed.data.name === POLICY_APPROVAL_WORKFLOW) return failed(`definition.name: '${POLICY_APPROVAL_WORKFLOW}' is reserved for the operator's policy approvals`);
        if (parsed.data.worktree.enabled) {
          return failed(
            'runWorkflow does not own a worktree lifecycle: a definition with worktree.enabled runs no node. Use startWorkflow for catalog-managed isolation, or acquire a workspace and pass its path as opts.cwd with an in-place definition',
          );
        }
        const given = inputsSchema.safeParse(inputs);
        if (!given.success) return failed(`inputs: ${given.error.issues[0]?.message ?? 'expected an object of string values'}`);
        const cwd = opts?.cwd;
        if (cwd !== undefined && (typeof cwd !== 'string' || !isAbsolute(cwd))) return failed(`opts.cwd: expected an absolute path, got ${JSON.stringify(cwd)}`);
        const runs = needRuns(deps);
        const { runId } = await runs.startDefinition({
          definition: parsed.data,
          ...(given.data ? { inputs: given.data } : {}),
          cwd: cwd ?? deps.home,
          ribId,
          startedByRibId: ribId,
          scope: 'RIB',
        });
        return ribWorkflowRunResult(await runs.settled(runId));
      } catch (err) {
        return failed(errorMessage(err));
      }
    },
  };
}

/** The seams over runs the rib started: `getRunStatus`, `cancelRun`, `respondToRun`. */
function runControlSeams(deps: RunSeamsDeps, ribId: string): Pick<RibRunSeams, 'getRunStatus' | 'cancelRun' | 'respondToRun'> {
  return {
    async getRunStatus(runId) {
      if (typeof runId !== 'string') return undefined;
      const run = await needRuns(deps).get(runId);
      if (!run || (run.ribId !== ribId && run.startedByRibId !== ribId)) return undefined;
      return ribRunStatus(run);
    },

    async cancelRun(runId) {
      try {
        const runs = needRuns(deps);
        const run = typeof runId === 'string' ? await runs.get(runId) : undefined;
        if (!run || run.startedByRibId !== ribId) return { ok: false, error: `run ${String(runId)} was not started by rib '${ribId}'` };
        if (terminal.includes(run.status)) return { ok: false, error: `run ${run.id} already ${run.status}` };
        return await runs.cancel(run.id);
      } catch (err) {
        return { ok: false, error: errorMessage(err) };
      }
    },

    async respondToRun(runId, nodeId, text, pauseId) {
      try {
        const host = needHost(deps);
        const runs = needRuns(deps);
        const run = typeof runId === 'string' ? await runs.get(runId) : undefined;
        if (!run || run.startedByRibId !== ribId) return { ok: false, error: `run ${String(runId)} was not started by rib '${ribId}'` };
        // The operator's grant first: an ungranted rib is refused and no approval is asked.
        if (!host.grants.canAnswerGates(ribId, run.workflowName)) {
          return { ok: false, error: `rib '${ribId}' may not answer the gates of workflow '${run.workflowName}': no grant in ribApprovalGrants or KEELSON_RIB_APPROVAL_GRANTS` };
        }
        if (typeof nodeId !== 'string' || typeof text !== 'string' || (pauseId !== undefined && typeof pauseId !== 'string')) {
          return { ok: false, error: 'respondToRun takes (runId, nodeId, text, pauseId?) strings' };
        }
        const verdict = await policyVerdict(host, ribId, 'workflow_respond', { runId: run.id, nodeId, ...(pauseId ? { pauseId } : {}) });
        if (verdict.outcome === 'deny') return { ok: false, error: `workflow_respond denied by policy ${verdict.policyId}: ${verdict.reason}` };
        return await runs.respond({ runId: run.id, nodeId, text, ...(pauseId ? { pauseId } : {}) });
      } catch (err) {
        return { ok: false, error: errorMessage(err) };
      }
    },
  };
}

/** `refreshWorkflow`: runs one of the rib's own workflows and publishes its bound outputs when it succeeds; never throws. */
function refreshSeam(deps: RunSeamsDeps, ribId: string): Pick<RibRunSeams, 'refreshWorkflow'> {
  return {
    async refreshWorkflow(workflowName, inputs) {
      try {
        const host = needHost(deps);
        const entry = host.workflows().find((e) => e.ribId === ribId && e.name === workflowName);
        if (!entry) {
          deps.warn({ stage: 'runtime', rule: 'refresh', ribId, message: `refreshWorkflow('${String(workflowName)}'): rib '${ribId}' contributes no such workflow` });
          return;
        }
        const given = inputsSchema.safeParse(inputs);
        if (!given.success) throw new Error(`inputs: ${given.error.issues[0]?.message}`);
        const runs = needRuns(deps);
        const { runId } = await runs.start({ name: entry.name, ...(given.data ? { inputs: given.data } : {}), startedByRibId: ribId });
        const run = await runs.settled(runId);
        if (run.status === 'SUCCEEDED') await deps.bound.publish(run);
        else deps.warn({ stage: 'runtime', rule: 'refresh', ribId, message: `refreshWorkflow('${entry.name}'): run ${run.id} ${run.status}${run.error ? `: ${run.error}` : ''}; the prior version stands` });
      } catch (err) {
        deps.warn({ stage: 'runtime', rule: 'refresh', ribId, message: `refreshWorkflow('${String(workflowName)}') failed: ${errorMessage(err)}` });
      }
    },
  };
}

/**
 * The run seams of one rib (seed 000 `RibContext`): `runWorkflow`, `startWorkflow`, `getRunStatus`,
 * `cancelRun`, `respondToRun`, `refreshWorkflow`, `registerOp`. Grants are checked before the policy
 * engine (an ungranted rib gets a plain refusal and nobody is asked); a granted call then passes
 * policy as the operator's tool would (`workflow_run`, `workflow_respond`), an `ask` waiting at most
 * `KEELSON_CROSS_RIB_CALL_TIMEOUT_MS`. The seams the seed calls non-throwing resolve `{ ok: false }`
 * (or a failed result, or undefined) instead.
 */
export function createRunSeams(deps: RunSeamsDeps): (ribId: string) => Partial<RibRunSeams> {
  return (ribId) => ({
    ...launchSeams(deps, ribId),
    ...runControlSeams(deps, ribId),
    ...refreshSeam(deps, ribId),
    registerOp(req) {
      return deps.liveOps.register(ribId, req);
    },
  });
}
