import { randomUUID } from 'node:crypto';
import { MeshError, type RunStatus, type TurnStatus } from '@keelson/schema';
import { clipText } from '../drivers/clip';
import { formatSessionId, requireHarnessId, type SessionId } from '../ids';
import type { DriverRegistry } from '../registry';
import type { HarnessSettings } from '../settings';
import type { Places } from './places';
import { HOST, type HarnessStore, type TaskRecord } from './store';
import type { Turn, TurnControl, TurnOutcome, Turns } from './turn';

export interface TasksDeps {
  store: HarnessStore;
  drivers: DriverRegistry;
  settings: HarnessSettings;
  places: Places;
  turns: Turns;
}

const taskStatusOf: Record<TurnStatus, RunStatus> = { COMPLETED: 'SUCCEEDED', INTERRUPTED: 'CANCELLED', FAILED: 'FAILED', LOST: 'FAILED' };

/** Tasks: a prompt run headless in a project by the `harnessTask` workflow, one CLI turn at a time. */
export class Tasks {
  constructor(private readonly deps: TasksDeps) {}

  /**
   * Records a task to run `prompt` headless in the project (the caller starts its workflow). A
   * harness that pins ids gets its session now, so clients can follow it before the first event.
   */
  async create(input: { harnessId: string; prompt: string; projectId: string | null }): Promise<TaskRecord> {
    const { store, drivers, places } = this.deps;
    const harnessId = requireHarnessId(input.harnessId);
    const driver = drivers[harnessId];
    const executor = await driver.taskExecutor();
    if (!executor.implemented) throw new MeshError('CAPABILITY_UNSUPPORTED', `runTask is not supported for ${harnessId}: ${executor.reason}`, { harnessId, capability: 'taskExecutor' });
    if (!input.projectId) throw new MeshError('BAD_USER_INPUT', 'projectId: required — a task runs in its project\'s root');
    const place = await places.of(input.projectId, null);
    const id = randomUUID();
    let sessionId: SessionId | null = null;
    if (driver.features.pinning !== 'none') {
      await driver.prepare();
      const nativeId = driver.newNativeId();
      await driver.pin(nativeId, place.cwd);
      sessionId = formatSessionId(harnessId, nativeId);
    }
    const task = await store.createTask({ id, harnessId, prompt: input.prompt, projectId: place.projectId, cwd: place.cwd, sessionId, workflowId: `harness-task-${id}` });
    if (sessionId) {
      await store.create({ id: sessionId, harnessId, nativeId: sessionId.slice(harnessId.length + 1), projectId: place.projectId, workspaceId: null, cwd: place.cwd, title: null, origin: 'task', taskId: id });
    }
    return task;
  }

  /**
   * The CLI turn of a task (the `harnessTask` workflow's activity): one attempt at a time per task
   * (a lease renewed with the heartbeat), the process group killed when `signal` aborts
   * (cancellation) and KEELSON_TASK_ID in the child's environment.
   * @throws TURN_IN_FLIGHT (retryable) while an earlier attempt still runs.
   */
  async runTurn(taskId: string, ctl: TurnControl): Promise<TurnOutcome> {
    const { store, settings, places, turns } = this.deps;
    const holder = `task:${taskId}:${ctl.attempt}:${HOST}:${process.pid}`;
    const task = await store.acquireTaskLease(taskId, holder, settings.leaseMs);
    try {
      if (task.status !== 'RUNNING') return { sessionId: task.sessionId, turnId: '', status: task.status === 'SUCCEEDED' ? 'COMPLETED' : task.status === 'CANCELLED' ? 'INTERRUPTED' : 'FAILED', result: task.result, error: task.error };
      const beat = (turn: Turn | undefined) => {
        ctl.heartbeat({ sessionId: turn?.sessionId ?? task.sessionId, pgid: turn?.proc.pgid ?? null });
        void store.renewTaskLease(taskId, holder, settings.leaseMs).catch(() => undefined);
      };
      const opts = { text: task.prompt, attachments: [], allowTools: [], holder, taskId };
      return await turns.drive(ctl, beat, async () => {
        if (!task.sessionId) return turns.startNewSession(task, await places.requireTaskRoot(task), opts);
        const record = await store.get(await store.resolveAlias(task.sessionId));
        if (!record) throw new MeshError('NOT_FOUND', `task ${taskId}: its session ${task.sessionId} is gone`);
        return turns.start(record, await places.cwdOf(record), opts);
      });
    } finally {
      await store.releaseTaskLease(taskId, holder).catch(() => undefined);
    }
  }

  /**
   * Interrupts the turn a task runs (the workflow's cancellation, without waiting for a heartbeat
   * to carry it): killed here when this process runs it, else flagged for its holder.
   */
  async interrupt(taskId: string): Promise<boolean> {
    const { store, turns } = this.deps;
    const task = await store.task(taskId);
    if (!task?.sessionId) return false;
    const sessionId = await store.resolveAlias(task.sessionId);
    const local = turns.ofSession(sessionId);
    if (local) {
      await local.interrupt();
      return true;
    }
    return (await store.requestInterrupt(sessionId)) !== null;
  }

  /** The task's final status from its turn (first settle wins). */
  settle(taskId: string, outcome: { status: TurnStatus | RunStatus; result?: string | null; error?: string | null }): Promise<TaskRecord | null> {
    const status = outcome.status in taskStatusOf ? taskStatusOf[outcome.status as TurnStatus] : (outcome.status as RunStatus);
    return this.deps.store.settleTask(taskId, status, { result: outcome.result ? clipText(outcome.result).text : null, error: outcome.error ? clipText(outcome.error, 1000).text : null });
  }
}
