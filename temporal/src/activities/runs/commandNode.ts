import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { sandboxEnv, SandboxUnavailableError, type ProcessSandbox, type SandboxedCommand } from '@keelson/platform';
import { MeshError, planOf, runLimits, type WorkflowNode } from '@keelson/schema';
import { processSpan } from '@keelson/service';
import { whenValue, type CapturedOutput, type RunRecord, type RunStore } from '@keelson/runs';
import { asActivity } from '../failures';
import { claimAttempt, endEarlierAttempts, readCommandRecord, runCommand, settleRecords, type CommandResult } from './commandProcess';
import type { NodeOutcome, NodeRef } from './runActivities';
import { runNodeOf, type RunActivityContext } from './runContext';
import { inputEnv } from './templates';

/** A bash or script node of a run definition. */
type CommandNode = Extract<WorkflowNode, { type: 'bash' | 'script' }>;

/** One attempt of a command node: the run, the node, the launch, Temporal's attempt number and its records folder. */
interface CommandAttempt {
  run: RunRecord;
  node: CommandNode;
  launch: number;
  attempt: number;
  records: string;
}

/** The file extension a script node's source is written with, by its runtime. */
const scriptExtension = { bash: 'sh', sh: 'sh', node: 'js', python3: 'py' } as const;

/** The `runCommandNode` activity of the `dagRun` workflow, over the shared run context. */
export function runCommandNodeActivity(c: RunActivityContext) {
  const { deps, need, loadRun, sandboxOf } = c;
  return {
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
        const node = runNodeOf(run, input.nodeId);
        if (node.type !== 'bash' && node.type !== 'script') throw new MeshError('BAD_USER_INPUT', `node ${node.id} is a ${node.type} node, not a command`);
        const started = await store.startAttempt(run.id, node.id, input.launch, ctx.info.attempt);
        if (started.completed) return { status: 'SUCCEEDED', value: whenValue(started.completed.output), exitCode: started.completed.exitCode, alreadyCompleted: true };
        ctx.heartbeat();
        const maxOutputBytes = deps?.outputBytes ?? runLimits.outputBytes;
        // One record per attempt, out of the command's sight: an earlier attempt whose command
        // succeeded while its worker died before reporting it is reported now, not run again.
        const records = join(dirname(run.artifactsDir), 'attempts', String(input.launch), node.id);
        const at: CommandAttempt = { run, node, launch: input.launch, attempt: ctx.info.attempt, records };
        const reported = await reportEarlierSuccess(store, at, maxOutputBytes);
        if (reported) return reported;

        const { argv, readable } = await commandArgv(run, node);
        const timeoutMs = planOf(run.definition).find((n) => n.id === node.id)!.timeoutMs;
        await mkdir(run.artifactsDir, { recursive: true });
        const what = `${node.type} node "${node.id}"`;
        const command = await sandboxedCommand(sandbox, store, at, { argv, readable, what });
        const result = await processSpan(what, { 'keelson.run.id': run.id, 'keelson.node.id': node.id, 'keelson.node.type': node.type }, (traceEnv) => runCommand({
          argv: command.argv,
          cwd: run.cwd,
          env: commandEnv(deps?.env ?? process.env, command, at, traceEnv),
          timeoutMs,
          signal: ctx.cancellationSignal,
          maxOutputBytes,
          record: join(records, String(ctx.info.attempt)),
          onTick: (p) => ctx.heartbeat(p),
        }));
        return settleCommandResult(store, ctx, at, result, timeoutMs);
      });
    },
  };
}

/** The first earlier attempt (by number) whose command exited 0, from its record. */
async function succeededEarlier(records: string, attempt: number, maxOutputBytes: number): Promise<CapturedOutput | undefined> {
  for (let earlier = 1; earlier < attempt; earlier += 1) {
    const record = await readCommandRecord(join(records, String(earlier)), maxOutputBytes);
    if (record?.exitCode === 0) return record;
  }
  return undefined;
}

/**
 * Claims the attempt's record, ends what earlier attempts left running, and completes the node from
 * an earlier attempt whose command succeeded unreported; undefined when there is none.
 */
async function reportEarlierSuccess(store: RunStore, at: CommandAttempt, maxOutputBytes: number): Promise<NodeOutcome | undefined> {
  await claimAttempt(at.records, at.attempt);
  await endEarlierAttempts(at.records, at.attempt);
  const earlier = await succeededEarlier(at.records, at.attempt, maxOutputBytes);
  if (!earlier) return undefined;
  await store.completeNode(at.run.id, at.node.id, at.launch, earlier);
  await settleRecords(at.records);
  return { status: 'SUCCEEDED', value: whenValue(earlier.output), exitCode: 0, alreadyCompleted: false };
}

/** The node's command line: bash's `-c`, or a script written beside the artifacts (and readable in the sandbox). */
async function commandArgv(run: RunRecord, node: CommandNode): Promise<{ argv: string[]; readable: string[] }> {
  if (node.type === 'bash') return { argv: ['bash', '-c', node.bash], readable: [] };
  const file = join(dirname(run.artifactsDir), 'scripts', `${node.id}.${scriptExtension[node.runtime]}`);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, node.script, { mode: 0o700 });
  return { argv: [node.runtime === 'node' ? process.execPath : node.runtime, file], readable: [file] };
}

/** The command as the sandbox runs it; without a usable sandbox the attempt is recorded failed and the node fails for good. */
async function sandboxedCommand(
  sandbox: ProcessSandbox,
  store: RunStore,
  at: CommandAttempt,
  spec: { argv: string[]; readable: string[]; what: string },
): Promise<SandboxedCommand> {
  const { run, node } = at;
  try {
    return await sandbox.command({ argv: spec.argv, cwd: run.cwd, writable: [run.cwd, run.artifactsDir], readable: spec.readable, network: node.network ?? false, gitWrite: node.gitWrite ?? false, what: spec.what });
  } catch (err) {
    if (!(err instanceof SandboxUnavailableError)) throw err;
    await store.attemptFailed(run.id, node.id, at.launch, at.attempt, { output: '', outputBytes: 0, truncated: false, exitCode: null, error: err.message });
    throw ApplicationFailure.create({ message: err.message, type: err.code, nonRetryable: true });
  }
}

/** The command's environment: the worker's allowlist, the node's `env`, the inputs and the run's variables. */
function commandEnv(base: Record<string, string | undefined>, command: SandboxedCommand, at: CommandAttempt, traceEnv: Record<string, string>): Record<string, string | undefined> {
  const { run, node } = at;
  return {
    ...sandboxEnv(base),
    ...(command.sandboxed ? { TMPDIR: '/tmp' } : {}),
    ...node.env,
    ...inputEnv(run.inputs),
    ARTIFACTS_DIR: run.artifactsDir,
    KEELSON_RUN_ID: run.id,
    KEELSON_NODE_ID: node.id,
    KEELSON_WORKFLOW: run.workflowName,
    KEELSON_ATTEMPT: String(at.attempt),
    // The process continues the run's trace (nothing while tracing is off).
    ...traceEnv,
  };
}

/** The failure message of a command that did not succeed: how it ended, and the end of its output. */
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

/** What the command's end makes of the attempt: superseded, cancelled, the node completed, or a failure retried while `retries` allow. */
async function settleCommandResult(store: RunStore, ctx: Context, at: CommandAttempt, result: CommandResult, timeoutMs: number): Promise<NodeOutcome> {
  const { run, node } = at;
  const what = `${node.type} node "${node.id}"`;
  if (result.superseded) {
    // Temporal already gave this attempt up and its retry has begun: nothing ran, nothing to record.
    throw ApplicationFailure.create({ message: `${what}: attempt ${at.attempt} was superseded by a later attempt before it started the command`, type: 'SUPERSEDED' });
  }
  const captured = { output: result.output, outputBytes: result.outputBytes, truncated: result.truncated, exitCode: result.exitCode };
  if (result.cancelled) {
    // Only the run's cancel settles the node; a worker shutting down leaves it to the retry.
    if (ctx.cancellationDetails?.cancelRequested) {
      await store.settleNode(run.id, node.id, at.launch, 'CANCELLED', { error: 'cancelled', output: result.output });
    }
    throw new CancelledFailure(`${node.type} node "${node.id}" cancelled; its process group ${result.pid} was killed`);
  }
  if (result.exitCode === 0 && !result.timedOut) {
    await store.completeNode(run.id, node.id, at.launch, captured);
    await settleRecords(at.records);
    return { status: 'SUCCEEDED', value: whenValue(result.output), exitCode: 0, alreadyCompleted: false };
  }
  const error = describeExit(node, result, timeoutMs);
  const failures = await store.attemptFailed(run.id, node.id, at.launch, at.attempt, { ...captured, error });
  const retries = node.retries ?? 0;
  throw ApplicationFailure.create({ message: error, type: 'UPSTREAM_FAILED', nonRetryable: failures > retries });
}
