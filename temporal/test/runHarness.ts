import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { streams, type EventEnvelope, type RunEventPayload } from '@keelson/schema';
import type { ProcessSandbox } from '@keelson/platform';
import { silentLogger } from '@keelson/service';
import { parse } from 'yaml';
import { createTestDatabase, type TestDatabase } from '../../test/support/db';
import { definitionOf, registerRun } from '../../test/support/registerRun';
import { testTemporalAddress, testWorkflowBundleFile } from '../../test/support/temporalServer';
import { createActivities, type OpRegistry, type PromptNodeExecutor } from '../src/activities';
import { connectClient } from '../src/client';
import { runWorkflowId, startRunWorkflow } from '../src/runClient';
import { RunStore } from '@keelson/runs';
import { startWorker, type RunningWorker } from '../src/worker';
import { openActivityDeps, type OpenedActivityDeps } from '../src/workerDeps';
import type { dagRun } from '../src/workflows';

export interface RunHarnessOptions {
  promptExecutor?: PromptNodeExecutor;
  ops?: OpRegistry;
  /** @default 3000 */
  heartbeatTimeoutMs?: number;
  /** The worker's environment as its activities read it (the command sandbox, a command's environment). @default process.env */
  env?: Record<string, string | undefined>;
  /** The command nodes' sandbox. @default the one `env` configures */
  sandbox?: ProcessSandbox;
}

export interface StartedRun {
  runId: string;
  handle: WorkflowHandle<typeof dagRun>;
  artifactsDir: string;
}

export interface NodeRow {
  node_id: string;
  status: string;
  attempt: number;
  output: string | null;
  output_bytes: string;
  output_truncated: boolean;
  exit_code: number | null;
  error: string | null;
}

export interface PauseRow {
  pause_id: string;
  node_id: string;
  decision: string | null;
  closed_by: string | null;
  prompt: string;
  artifacts: unknown;
}

/**
 * The `dagRun` workflow on a real worker and the run's dev server, against a fresh database, without
 * the GraphQL layer: runs are registered with the store and started with the client helper.
 */
export class RunHarness {
  private constructor(
    readonly db: TestDatabase,
    readonly opened: OpenedActivityDeps,
    readonly worker: RunningWorker,
    readonly client: Client,
    readonly taskQueue: string,
    readonly home: string,
    private readonly heartbeatTimeoutMs: number,
  ) {}

  static async start(opts: RunHarnessOptions = {}): Promise<RunHarness> {
    const db = await createTestDatabase();
    const opened = await openActivityDeps({ databaseUrl: db.url, log: silentLogger(), promptExecutor: opts.promptExecutor, ops: opts.ops, env: opts.env, sandbox: opts.sandbox });
    const taskQueue = `runs-test-${randomUUID()}`;
    const address = testTemporalAddress();
    const worker = await startWorker({ address, taskQueue, activities: createActivities(opened.deps), workflowBundleFile: testWorkflowBundleFile() });
    const client = await connectClient({ address });
    const home = await mkdtemp(join(tmpdir(), 'keelson-runs-'));
    return new RunHarness(db, opened, worker, client, taskQueue, home, opts.heartbeatTimeoutMs ?? 3000);
  }

  get store(): RunStore {
    return this.opened.deps.runs!.store;
  }

  /** Registers a run of `yaml` (a definition) and starts its first launch, in `cwd` (default the harness's home). */
  async start(yaml: string, opts: { inputs?: Record<string, string>; maxHistoryEvents?: number; cwd?: string } = {}): Promise<StartedRun> {
    const def = definitionOf(parse(yaml));
    const runId = randomUUID();
    const workflowId = runWorkflowId(def.name, runId);
    const artifactsDir = join(this.home, 'runs', runId, 'artifacts');
    await registerRun(this.store, def, { id: runId, inputs: opts.inputs ?? {}, cwd: opts.cwd ?? this.home, artifactsDir, temporalWorkflowId: workflowId });
    const handle = await startRunWorkflow(this.client, {
      taskQueue: this.taskQueue,
      workflowId,
      workflowName: def.name,
      title: def.name,
      input: { runId, launch: 1, heartbeatTimeoutMs: this.heartbeatTimeoutMs, ...(opts.maxHistoryEvents ? { maxHistoryEvents: opts.maxHistoryEvents } : {}) },
    });
    return { runId, handle, artifactsDir };
  }

  async status(runId: string): Promise<{ status: string; error: string | null; launch: number }> {
    const rows = (await this.query('SELECT status, error, launch FROM runs WHERE id = $1', [runId])) as { status: string; error: string | null; launch: number }[];
    return rows[0]!;
  }

  query(sql: string, params: unknown[] = []): Promise<unknown[]> {
    return this.opened.dataSource.query(sql, params) as Promise<unknown[]>;
  }

  async nodes(runId: string): Promise<NodeRow[]> {
    return (await this.query(
      'SELECT node_id, status, attempt, output, output_bytes, output_truncated, exit_code, error FROM run_nodes WHERE run_id = $1 ORDER BY position',
      [runId],
    )) as NodeRow[];
  }

  async pauses(runId: string): Promise<PauseRow[]> {
    return (await this.query('SELECT pause_id, node_id, decision, closed_by, prompt, artifacts FROM run_pauses WHERE run_id = $1 ORDER BY opened_at', [
      runId,
    ])) as PauseRow[];
  }

  /** `TYPE:node` (or `TYPE`) of every event of the run, in order. */
  async events(runId: string): Promise<string[]> {
    const events = (await this.opened.deps.ops!.events.read<RunEventPayload>(streams.runs, 0, { key: runId, limit: 1000 })) as EventEnvelope<RunEventPayload>[];
    return events.map((e) => (e.payload.nodeId ? `${e.type}:${e.payload.nodeId}` : e.type));
  }

  /** Waits until the run's status satisfies `done`. */
  async waitFor(runId: string, done: (status: string) => boolean, timeoutMs = 30_000): Promise<{ status: string; error: string | null; launch: number }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const row = await this.status(runId);
      if (done(row.status)) return row;
      if (Date.now() > deadline) throw new Error(`run ${runId} stayed ${row.status} (${row.error ?? 'no error'})`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Waits for the run's open pause on `nodeId`. */
  async openPause(runId: string, nodeId: string, timeoutMs = 30_000): Promise<PauseRow> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const open = (await this.pauses(runId)).find((p) => p.node_id === nodeId && p.closed_by === null);
      if (open) return open;
      if (Date.now() > deadline) throw new Error(`no open pause on ${nodeId} of run ${runId}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async stop(): Promise<void> {
    await this.client.connection.close();
    await this.worker.stop();
    await this.opened.close();
    await this.db.drop();
    await rm(this.home, { recursive: true, force: true });
  }
}
