import { asActor } from '../asActor';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { createSandbox, sandboxEnv, SandboxUnavailableError, type ProcessSandbox } from '@keelson/platform';
import { isMeshError, isTerminalRunStatus, MeshError, planOf, runLimits, runMessages, type PlanNode, type RunNodeStatus, type WorkflowNode, type Actor, type Caller } from '@keelson/schema';
import { processSpan, type Logger } from '@keelson/service';
import type { ProjectsApi } from '@keelson/runs';
import { whenValue, type CapturedOutput, type LaunchNodeState, type RunCheckoutRecord, type RunRecord, type RunStore } from '@keelson/runs';
import { asActivity } from '../failures';
import { workflowSteerReader } from '../steerReader';
import { readArtifacts } from './artifacts';
import { claimAttempt, endEarlierAttempts, readCommandRecord, runCommand, settleRecords, type CommandResult } from './commandProcess';
import { inputEnv, referencedNodes, renderText, withArtifactsDir } from './templates';

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

/** The first earlier attempt (by number) whose command exited 0, from its record. */
async function succeededEarlier(records: string, attempt: number, maxOutputBytes: number): Promise<CapturedOutput | undefined> {
  for (let earlier = 1; earlier < attempt; earlier += 1) {
    const record = await readCommandRecord(join(records, String(earlier)), maxOutputBytes);
    if (record?.exitCode === 0) return record;
  }
  return undefined;
}

function nodeOf(run: RunRecord, nodeId: string): WorkflowNode {
  const node = run.definition.nodes.find((n) => n.id === nodeId);
  if (!node) throw new MeshError('NOT_FOUND', `run ${run.id} (${run.workflowName}) has no node ${JSON.stringify(nodeId)}`);
  return node;
}

function describeExit(node: WorkflowNode, r: CommandResult, timeoutMs: number): string {
  const what = `${node.type} node "${node.id}"`;
  const last = r.output.trim().split('\n').slice(-3).join(' | ').slice(-300);
  const reason = r.timedOut
    ? `timed out after ${Math.round(timeoutMs / 1000)}s`
    : r.signal
      ? `was killed by ${r.signal}`
      : `exited with code ${r.exitCode}`;
  return last ? `${what} ${reason}: ${last}` : `${what} ${reason}`;
}

const scriptExtension = { bash: 'sh', sh: 'sh', node: 'js', python3: 'py' } as const;

/** The activities of the `dagRun` workflow. Each writes its state change and event in one transaction, once. */
export function createRunActivities(deps: RunActivityDeps | undefined) {
  let defaultSandbox: ProcessSandbox | undefined;
  const sandboxOf = (d: RunActivityDeps): ProcessSandbox => d.sandbox ?? (defaultSandbox ??= createSandbox());
  const need = (): RunActivityDeps => {
    if (!deps) throw ApplicationFailure.nonRetryable('this worker was started without a runs store (ActivityDeps.runs)', 'SERVICE_UNAVAILABLE');
    return deps;
  };
  const loadRun = async (runId: string): Promise<RunRecord> => {
    const run = await need().store.getRun(runId);
    if (!run) throw new MeshError('NOT_FOUND', `run ${JSON.stringify(runId)} does not exist`);
    return run;
  };

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
        if (run.definition.worktree.enabled && !run.checkout?.path) {
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
        return { plan: planOf(run.definition), nodes };
      });
    },

    /**
     * Runs a bash or script node in the run's cwd with `$ARTIFACTS_DIR` and the inputs in its
     * environment, heartbeating; a cancel kills its process group. It runs in the sandbox: only the
     * cwd and `$ARTIFACTS_DIR` writable (their `.git` and `.keelson` read-only unless the node says
     * `gitWrite`), a private /tmp, the keelson home hidden, no network unless the node says `network`;
     * its environment is the worker's `sandboxEnv` allowlist plus the node's `env`, the inputs and the
     * run's variables. Without a usable sandbox the node fails for good (CAPABILITY_UNSUPPORTED,
     * naming the fix). A node that already completed is not run again. A failed attempt is recorded
     * and retried while the node's `retries` allow.
     */
    async runCommandNode(input: NodeRef): Promise<NodeOutcome> {
      return asActivity(async () => {
        const { store } = need();
        const sandbox = sandboxOf(need());
        const ctx = Context.current();
        const run = await loadRun(input.runId);
        const node = nodeOf(run, input.nodeId);
        if (node.type !== 'bash' && node.type !== 'script') throw new MeshError('BAD_USER_INPUT', `node ${node.id} is a ${node.type} node, not a command`);
        const started = await store.startAttempt(run.id, node.id, input.launch, ctx.info.attempt);
        if (started.completed) return { status: 'SUCCEEDED', value: whenValue(started.completed.output), exitCode: started.completed.exitCode, alreadyCompleted: true };
        ctx.heartbeat();
        const maxOutputBytes = deps?.outputBytes ?? runLimits.outputBytes;
        // One record per attempt, out of the command's sight: an earlier attempt whose command
        // succeeded while its worker died before reporting it is reported now, not run again.
        const records = join(dirname(run.artifactsDir), 'attempts', String(input.launch), node.id);
        await claimAttempt(records, ctx.info.attempt);
        await endEarlierAttempts(records, ctx.info.attempt);
        const earlier = await succeededEarlier(records, ctx.info.attempt, maxOutputBytes);
        if (earlier) {
          await store.completeNode(run.id, node.id, input.launch, earlier);
          await settleRecords(records);
          return { status: 'SUCCEEDED', value: whenValue(earlier.output), exitCode: 0, alreadyCompleted: false };
        }

        let argv: string[];
        const readable: string[] = [];
        if (node.type === 'bash') argv = ['bash', '-c', node.bash];
        else {
          const file = join(dirname(run.artifactsDir), 'scripts', `${node.id}.${scriptExtension[node.runtime]}`);
          await mkdir(dirname(file), { recursive: true });
          await writeFile(file, node.script, { mode: 0o700 });
          argv = [node.runtime === 'node' ? process.execPath : node.runtime, file];
          readable.push(file);
        }
        const timeoutMs = planOf(run.definition).find((n) => n.id === node.id)!.timeoutMs;
        await mkdir(run.artifactsDir, { recursive: true });
        const what = `${node.type} node "${node.id}"`;
        let command;
        try {
          command = await sandbox.command({ argv, cwd: run.cwd, writable: [run.cwd, run.artifactsDir], readable, network: node.network ?? false, gitWrite: node.gitWrite ?? false, what });
        } catch (err) {
          if (!(err instanceof SandboxUnavailableError)) throw err;
          await store.attemptFailed(run.id, node.id, input.launch, ctx.info.attempt, { output: '', outputBytes: 0, truncated: false, exitCode: null, error: err.message });
          throw ApplicationFailure.create({ message: err.message, type: err.code, nonRetryable: true });
        }
        const result = await processSpan(what, { 'keelson.run.id': run.id, 'keelson.node.id': node.id, 'keelson.node.type': node.type }, (traceEnv) => runCommand({
          argv: command.argv,
          cwd: run.cwd,
          env: {
            ...sandboxEnv(deps?.env ?? process.env),
            ...(command.sandboxed ? { TMPDIR: '/tmp' } : {}),
            ...node.env,
            ...inputEnv(run.inputs),
            ARTIFACTS_DIR: run.artifactsDir,
            KEELSON_RUN_ID: run.id,
            KEELSON_NODE_ID: node.id,
            KEELSON_WORKFLOW: run.workflowName,
            KEELSON_ATTEMPT: String(ctx.info.attempt),
            // The process continues the run's trace (nothing while tracing is off).
            ...traceEnv,
          },
          timeoutMs,
          signal: ctx.cancellationSignal,
          maxOutputBytes,
          record: join(records, String(ctx.info.attempt)),
          onTick: (p) => ctx.heartbeat(p),
        }));
        if (result.superseded) {
          // Temporal already gave this attempt up and its retry has begun: nothing ran, nothing to record.
          throw ApplicationFailure.create({ message: `${what}: attempt ${ctx.info.attempt} was superseded by a later attempt before it started the command`, type: 'SUPERSEDED' });
        }
        const captured = { output: result.output, outputBytes: result.outputBytes, truncated: result.truncated, exitCode: result.exitCode };
        if (result.cancelled) {
          // Only the run's cancel settles the node; a worker shutting down leaves it to the retry.
          if (ctx.cancellationDetails?.cancelRequested) {
            await store.settleNode(run.id, node.id, input.launch, 'CANCELLED', { error: 'cancelled', output: result.output });
          }
          throw new CancelledFailure(`${node.type} node "${node.id}" cancelled; its process group ${result.pid} was killed`);
        }
        if (result.exitCode === 0 && !result.timedOut) {
          await store.completeNode(run.id, node.id, input.launch, captured);
          await settleRecords(records);
          return { status: 'SUCCEEDED', value: whenValue(result.output), exitCode: 0, alreadyCompleted: false };
        }
        const error = describeExit(node, result, timeoutMs);
        const failures = await store.attemptFailed(run.id, node.id, input.launch, ctx.info.attempt, { ...captured, error });
        const retries = node.retries ?? 0;
        throw ApplicationFailure.create({ message: error, type: 'UPSTREAM_FAILED', nonRetryable: failures > retries });
      });
    },

    /**
     * Runs a prompt node through the registered executor (its rendered prompt recorded on the node
     * first); without one, CAPABILITY_UNSUPPORTED.
     */
    async runPromptNode(input: NodeRef): Promise<NodeOutcome> {
      return asActivity(async () => {
        const { store, promptExecutor } = need();
        const ctx = Context.current();
        const run = await loadRun(input.runId);
        const node = nodeOf(run, input.nodeId);
        if (node.type !== 'prompt') throw new MeshError('BAD_USER_INPUT', `node ${node.id} is a ${node.type} node, not a prompt`);
        const started = await store.startAttempt(run.id, node.id, input.launch, ctx.info.attempt);
        if (started.completed) return { status: 'SUCCEEDED', value: whenValue(started.completed.output), alreadyCompleted: true };
        const unsupported = `prompt node "${node.id}": no model provider is registered on this worker yet`;
        if (!promptExecutor) {
          await store.attemptFailed(run.id, node.id, input.launch, ctx.info.attempt, { output: '', outputBytes: 0, truncated: false, exitCode: null, error: unsupported });
          throw new MeshError('CAPABILITY_UNSUPPORTED', unsupported);
        }
        const outputs = await store.outputsOf(run.id, referencedNodes(node.prompt));
        const values = { inputs: run.inputs, outputs };
        const prompt = withArtifactsDir(renderText(node.prompt, values), run.artifactsDir);
        await store.recordPrompt(run.id, node.id, input.launch, ctx.info.attempt, prompt);
        const heartbeat = setInterval(() => ctx.heartbeat(), 1000);
        let result: PromptNodeResult;
        try {
          result = await promptExecutor({
            runId: run.id,
            nodeId: node.id,
            workflowName: run.workflowName,
            ribId: run.ribId,
            prompt,
            ...(node.system ? { system: withArtifactsDir(renderText(node.system, values), run.artifactsDir) } : {}),
            allowedTools: node.allowed_tools ?? [],
            model: node.model ?? run.definition.model,
            modelClass: node.modelClass ?? run.definition.modelClass,
            reasoningEffort: node.reasoningEffort ?? run.definition.reasoningEffort,
            cwd: run.cwd,
            artifactsDir: run.artifactsDir,
            inputs: run.inputs,
            caller: run.startedBy,
            timeoutMs: planOf(run.definition).find((n) => n.id === node.id)!.timeoutMs,
            signal: ctx.cancellationSignal,
            heartbeat: () => ctx.heartbeat(),
            steer: workflowSteerReader(runMessages.nodeSteerNotes, node.id),
          });
        } finally {
          clearInterval(heartbeat);
        }
        if (ctx.cancellationSignal.aborted) {
          if (ctx.cancellationDetails?.cancelRequested) {
            await store.settleNode(run.id, node.id, input.launch, 'CANCELLED', { error: 'cancelled', output: result.text });
          }
          throw new CancelledFailure(`prompt node "${node.id}" cancelled`);
        }
        const bytes = Buffer.byteLength(result.text);
        const captured = { output: result.text, outputBytes: bytes, truncated: false, exitCode: null };
        if (result.error) {
          const error = `prompt node "${node.id}" failed: ${result.error}`;
          const failures = await store.attemptFailed(run.id, node.id, input.launch, ctx.info.attempt, { ...captured, error });
          throw ApplicationFailure.create({ message: error, type: 'UPSTREAM_FAILED', nonRetryable: failures > (node.retries ?? 0) });
        }
        await store.completeNode(run.id, node.id, input.launch, captured);
        return { status: 'SUCCEEDED', value: whenValue(result.text), alreadyCompleted: false };
      });
    },

    /** A `cancel` node was reached: it succeeds with its reason as output; the workflow then stops the run. */
    async stopAtCancelNode(input: NodeRef): Promise<{ reason: string }> {
      return asActivity(async () => {
        const run = await loadRun(input.runId);
        const node = nodeOf(run, input.nodeId);
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
        const node = nodeOf(run, input.nodeId);
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

export type RunActivities = ReturnType<typeof createRunActivities>;
