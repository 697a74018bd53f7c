import { asActor } from '../asActor';
import { mkdir } from 'node:fs/promises';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { ProcessSandbox } from '@keelson/platform';
import { isMeshError, isTerminalRunStatus, MeshError, planOf, type PlanNode, type RunNodeStatus, type Actor, type Caller } from '@keelson/schema';
import type { Logger } from '@keelson/service';
import type { ProjectsApi } from '@keelson/runs';
import type { LaunchNodeState, RunCheckoutRecord, RunRecord, RunStore } from '@keelson/runs';
import { asActivity } from '../failures';
import { readArtifacts } from './artifacts';
import { runCommandNodeActivity } from './commandNode';
import { runPromptNodeActivity } from './promptNode';
import { runActivityContext, runNodeOf, type RunActivityContext } from './runContext';
import { referencedNodes, renderText } from './templates';

/** How much of a gate's question the Temporal UI's current details show. */
const GATE_QUESTION_CHARS = 200;

/** What a prompt node's executor receives: the rendered turn, confined to the run's working directory. */
export interface PromptNodeRequest {
  runId: string;
  nodeId: string;
  workflowName: string;
  /** The rib whose workflow this is, if any (the usage ledger's owner). */
  ribId: string | null;
  prompt: string;
  system?: string;
  /** Empty: a text-only turn. */
  allowedTools: string[];
  model?: string;
  modelClass?: 'fast' | 'balanced' | 'deep';
  reasoningEffort?: 'none' | 'low' | 'medium' | 'high' | 'xhigh';
  cwd: string;
  artifactsDir: string;
  inputs: Record<string, string>;
  /** Who started the run: the turn's tools act as this caller where they reach other services. */
  caller: Caller | null;
  /** The node's own timeout: the turn stops (and the attempt fails) after it. */
  timeoutMs: number;
  /** Aborted when the run is cancelled; pass it on to the provider. */
  signal: AbortSignal;
  /** Call while streaming: a lost worker and a cancel are noticed through it. */
  heartbeat(): void;
  /** The node's steer queue (`steerRun`): notes not read yet, asked between tool rounds. */
  steer?: () => Promise<readonly string[]>;
}

export interface PromptNodeResult {
  /** The turn's settled text: the node's output. */
  text: string;
  stopReason?: 'end' | 'max_tokens' | 'aborted' | 'timeout' | 'error';
  model?: string;
  /** When set, the turn failed with this message. */
  error?: string;
}

/** Runs a prompt node's turn through the provider registry (wired when providers exist). */
export type PromptNodeExecutor = (req: PromptNodeRequest) => Promise<PromptNodeResult>;

export interface RunActivityDeps {
  store: RunStore;
  /** Worktree leases for `worktree.enabled` runs. */
  projects?: ProjectsApi;
  /** Absent: prompt nodes fail with CAPABILITY_UNSUPPORTED. */
  promptExecutor?: PromptNodeExecutor;
  /** @default runLimits.outputBytes */
  outputBytes?: number;
  log?: Logger;
  /** The bubblewrap sandbox bash and script nodes run in. @default createSandbox() (required, nothing hidden) */
  sandbox?: ProcessSandbox;
  /** What a command's environment starts from (only its `sandboxEnv` allowlist passes). @default process.env */
  env?: Record<string, string | undefined>;
}

export interface NodeRef {
  runId: string;
  nodeId: string;
  launch: number;
}

/** What the workflow learns of a completed node: small facts, never its output. */
export interface NodeOutcome {
  status: 'SUCCEEDED';
  /** The start of the trimmed output, for `when` conditions. */
  value: string;
  exitCode?: number | null;
  /** True when the node had already completed (a retry after the commit): nothing ran again. */
  alreadyCompleted: boolean;
}

/** The activities of the `dagRun` workflow. Each writes its state change and event in one transaction, once. */
export function createRunActivities(deps: RunActivityDeps | undefined) {
  const c = runActivityContext(deps);
  const { beginLaunch, finishRun } = runLaunchActivities(c);
  return {
    beginLaunch,
    ...runCommandNodeActivity(c),
    ...runPromptNodeActivity(c),
    ...runGateActivities(c),
    finishRun,
  };
}

/** The launch's bookkeeping: `beginLaunch` opens it (lease included), `finishRun` settles it (lease released). */
function runLaunchActivities(c: RunActivityContext) {
  const { need, loadRun } = c;
  return {
    /**
     * Opens a launch: `RUN_STARTED` (once), the artifacts directory, the worktree lease when the
     * definition asks for one (fetched from origin's default branch when the project has an origin,
     * dependencies prepared; a lease the projects subgraph refuses fails the start, not retried);
     * returns the plan and what already completed in earlier launches.
     */
    async beginLaunch(input: { runId: string; launch: number }): Promise<{ plan: PlanNode[]; nodes: Record<string, LaunchNodeState> }> {
      return asActivity(async () => {
        const { store, projects } = need();
        const { run, nodes } = await store.beginLaunch(input.runId, input.launch, Context.current().info.workflowExecution?.runId ?? 'unknown');
        await mkdir(run.artifactsDir, { recursive: true });
        // A run without a project works in its own scratch folder, made here.
        if (!run.projectId && !run.definition.worktree.enabled) await mkdir(run.cwd, { recursive: true });
        if (run.definition.worktree.enabled && !run.checkout?.path) await leaseRunWorktree(store, projects, run);
        return { plan: planOf(run.definition), nodes };
      });
    },

    /**
     * Settles the launch. A succeeding run first releases its worktree lease (the branch stays), so
     * SUCCEEDED and the released checkout commit together.
     */
    async finishRun(input: { runId: string; launch: number; status: 'SUCCEEDED' | 'FAILED' | 'CANCELLED'; error?: string; actor?: Actor }): Promise<boolean> {
      // A cancel's events name who asked (the workflow carried them from its cancelledBy signal).
      return asActivity(() => asActor(input.actor, async () => {
        const { store, projects, log } = need();
        const run = await loadRun(input.runId);
        const checkout = run.checkout;
        let released: RunCheckoutRecord | undefined;
        if (input.status === 'SUCCEEDED' && run.launch === input.launch && !isTerminalRunStatus(run.status) && checkout?.leaseId && checkout.path && projects) {
          try {
            await projects.releaseWorkspace(checkout.leaseId);
          } catch (err) {
            if (!(err instanceof MeshError && err.code === 'NOT_FOUND')) throw err;
            log?.warn({ err, runId: run.id }, "the run's workspace lease was already gone");
          }
          released = { ...checkout, path: null, branch: null };
        }
        const { changed } = await store.finishRun(input.runId, input.launch, input.status, input.error, released);
        return changed;
      }));
    },
  };
}

/** A `worktree.enabled` run's lease, taken for its start and recorded as its checkout and cwd. */
async function leaseRunWorktree(store: RunStore, projects: ProjectsApi | undefined, run: RunRecord): Promise<void> {
  if (!run.projectId) throw new MeshError('BAD_USER_INPUT', `workflow ${run.workflowName} runs in a worktree and needs a project`);
  if (!projects) throw new MeshError('CAPABILITY_UNSUPPORTED', 'this worker cannot lease worktrees: it has no projects API');
  // The same lease as acquireWorkspace gives anyone: the default base, dependencies prepared. A refusal
  // (a failed fetch or preparation — nothing is left behind) fails the start for good, naming why;
  // only an unreachable projects subgraph is retried.
  const lease = await projects.acquireWorkspace(run.projectId, `run ${run.workflowName} ${run.id}`).catch((err: unknown) => {
    if (isMeshError(err) && err.code === 'SERVICE_UNAVAILABLE') throw err;
    const code = isMeshError(err) ? err.code : 'UPSTREAM_FAILED';
    throw ApplicationFailure.create({ type: code, message: (err as Error).message, nonRetryable: true });
  });
  await store.setCheckout(run.id, { leaseId: lease.id, path: lease.path, branch: lease.branch, worktreeEstablished: true });
  await store.setCwd(run.id, lease.path);
}

/** The nodes that settle without running anything: `cancel` nodes, approval gates, and settling from the workflow. */
function runGateActivities(c: RunActivityContext) {
  const { need, loadRun } = c;
  return {
    /** A `cancel` node was reached: it succeeds with its reason as output; the workflow then stops the run. */
    async stopAtCancelNode(input: NodeRef): Promise<{ reason: string }> {
      return asActivity(async () => {
        const run = await loadRun(input.runId);
        const node = runNodeOf(run, input.nodeId);
        if (node.type !== 'cancel') throw new MeshError('BAD_USER_INPUT', `node ${node.id} is a ${node.type} node, not a cancel`);
        const reason = renderText(node.reason, { inputs: run.inputs, outputs: await need().store.outputsOf(run.id, referencedNodes(node.reason)) });
        await need().store.settleNode(run.id, node.id, input.launch, 'SUCCEEDED', { output: reason });
        return { reason };
      });
    },

    /**
     * Opens an approval gate: the rendered prompt and the artifacts it names, the node WAITING, the run
     * PAUSED. Answers the gate's question as the definition words it (never rendered: node outputs
     * stay out of the workflow's history), shortened, for the Temporal UI's current details.
     */
    async openGate(input: NodeRef & { pauseId: string }): Promise<{ question: string }> {
      return asActivity(async () => {
        const { store } = need();
        const run = await loadRun(input.runId);
        const node = runNodeOf(run, input.nodeId);
        if (node.type !== 'approval') throw new MeshError('BAD_USER_INPUT', `node ${node.id} is a ${node.type} node, not an approval`);
        const outputs = await store.outputsOf(run.id, referencedNodes(node.prompt));
        const prompt = renderText(node.prompt, { inputs: run.inputs, outputs });
        const artifacts = await readArtifacts(run.artifactsDir, prompt);
        await store.openGate(run.id, node.id, input.launch, input.pauseId, prompt, artifacts);
        const question = node.prompt.replace(/\s+/g, ' ').trim();
        return { question: question.length > GATE_QUESTION_CHARS ? `${question.slice(0, GATE_QUESTION_CHARS - 1)}…` : question };
      });
    },

    /** Records the one decision of a pause (see RunStore.closeGate). */
    async closeGate(input: {
      runId: string;
      pauseId: string;
      text: string;
      decision: 'approved' | 'feedback';
      outcome: 'SUCCEEDED' | 'FAILED';
      error?: string;
      /** Who answered, recorded on APPROVAL_ANSWERED. */
      actor?: Actor;
    }): Promise<{ recorded: boolean; decision: string | null; closedBy: string | null }> {
      return asActivity(() => need().store.closeGate(input.runId, input.pauseId, input));
    },

    /** Settles a node that did not complete by itself (see RunStore.settleNode). */
    async settleNode(input: NodeRef & { status: Exclude<RunNodeStatus, 'PENDING' | 'RUNNING' | 'WAITING'>; error?: string; output?: string }): Promise<boolean> {
      return asActivity(() =>
        need().store.settleNode(input.runId, input.nodeId, input.launch, input.status, {
          ...(input.error !== undefined ? { error: input.error } : {}),
          ...(input.output !== undefined ? { output: input.output } : {}),
        }),
      );
    },
  };
}

export type RunActivities = ReturnType<typeof createRunActivities>;
