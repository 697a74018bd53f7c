import { randomUUID } from 'node:crypto';
import { MeshError, type HarnessEventPayloads, type TurnStatus } from '@keelson/schema';
import { traceparentEnv, type Logger } from '@keelson/service';
import type { DriverEvent } from '../contract';
import { clipText } from '../drivers/clip';
import type { CliDriver, TurnResult } from '../drivers/cliDriver';
import { formatSessionId, isNativeIdOf, type SessionId } from '../ids';
import { startGroupProcess, type GroupExit, type GroupProcess } from '../process/groupProcess';
import type { DriverRegistry } from '../registry';
import type { HarnessSettings } from '../settings';
import type { PermissionGate } from './permissions';
import type { HarnessStore, SessionRecord, TaskRecord } from './store';

export interface TurnAccepted {
  sessionId: SessionId;
  turnId: string;
  acceptedAt: Date;
}

/** How a turn ended, for the task that ran it. */
export interface TurnOutcome {
  sessionId: SessionId | null;
  turnId: string;
  status: TurnStatus;
  result: string | null;
  error: string | null;
}

export interface TurnOptions {
  text: string;
  attachments: string[];
  allowTools: string[];
  holder: string;
  taskId: string | null;
  /** The turn's id when the caller fixes it (a steer's); a fresh UUID otherwise. */
  turnId?: string;
  /** The turn's model and effort (checked by the driver already); else the session's defaults. */
  model?: string | null;
  effort?: string | null;
  /** Set by Turns: the CLI asks the permission endpoint before a tool runs (no after-the-fact approvals). */
  permissionPrompt?: { url: string; secret: string };
}

/** How an activity drives a turn it runs: its attempt, Temporal's cancellation and heartbeat. */
export interface TurnControl {
  attempt: number;
  signal: AbortSignal;
  heartbeat: (details: unknown) => void;
}

export interface TurnDeps {
  store: HarnessStore;
  drivers: DriverRegistry;
  settings: HarnessSettings;
  log: Logger;
  /** Approvals before a tool runs, for drivers with a permission hook (where this process serves the endpoint). */
  permissions?: PermissionGate;
}

/**
 * One running CLI: its session's lease renewed every second (a lost lease or an interrupt flagged by
 * another process stops it), the turn timeout, the CLI's output followed into the event log, and the
 * settlement (TurnComplete) once it exits.
 */
export class Turn {
  sessionId: SessionId | null;
  interrupted = false;
  timedOut = false;
  readonly done: Promise<TurnOutcome>;
  private readonly started = Date.now();
  private readonly pending: DriverEvent[] = [];
  private renewing = false;

  constructor(
    private readonly deps: TurnDeps,
    private readonly driver: CliDriver,
    readonly proc: GroupProcess,
    readonly turnId: string,
    private record: SessionRecord | null,
    private readonly opts: TurnOptions,
    private readonly task?: TaskRecord,
  ) {
    this.sessionId = record?.id ?? null;
    const renew = setInterval(() => this.renew(), 1000);
    const timeout = setTimeout(() => {
      this.timedOut = true;
      void proc.kill(deps.settings.killGraceMs);
    }, deps.settings.turnTimeoutMs);
    this.done = (async () => {
      const result = await this.follow();
      const exit = await proc.exited;
      if (exit.outputHeldOpen) {
        deps.log.warn({ turnId, sessionId: this.record?.id ?? null, pgid: proc.pgid }, 'a process the CLI started outside its group held its output open; the turn stopped reading it');
      }
      clearInterval(renew);
      clearTimeout(timeout);
      return this.settle(exit, result);
    })();
  }

  /** Kills the turn's whole process group; TurnComplete (INTERRUPTED) follows. */
  async interrupt(): Promise<void> {
    this.interrupted = true;
    await this.proc.kill(this.deps.settings.killGraceMs);
  }

  private renew(): void {
    const { store, settings, log } = this.deps;
    if (!this.record || this.renewing) return;
    this.renewing = true;
    store
      .renewTurn(this.record.id, this.turnId, settings.leaseMs)
      .then((r) => {
        if (!r.held) {
          log.warn({ sessionId: this.record?.id, turnId: this.turnId }, 'turn lease lost; stopping the CLI so two turns never run at once');
          void this.proc.kill(settings.killGraceMs);
        } else if (r.interruptRequested && !this.interrupted) {
          void this.interrupt();
        }
      })
      .catch((err: unknown) => log.warn({ err }, 'renewing a turn lease failed'))
      .finally(() => (this.renewing = false));
  }

  /** The CLI's JSON lines, mapped to events recorded on the session; its result, when it reported one. */
  private async follow(): Promise<{ mapper: ReturnType<CliDriver['mapper']>; result: TurnResult | undefined }> {
    const mapper = this.driver.mapper({ liveApprovals: this.opts.permissionPrompt !== undefined });
    let result: TurnResult | undefined;
    try {
      for await (const line of this.proc.lines) {
        if (!line.startsWith('{')) continue;
        let value: unknown;
        try {
          value = JSON.parse(line);
        } catch {
          continue;
        }
        if (!value || typeof value !== 'object' || Array.isArray(value)) continue;
        try {
          const out = mapper.line(value as Record<string, unknown>);
          if (out.nativeId) await this.announce(out.nativeId);
          for (const e of out.events) {
            if (this.record) await this.emit(e);
            else this.pending.push(e);
          }
          if (out.result) result = out.result;
        } catch (err) {
          this.deps.log.warn({ err, turnId: this.turnId }, 'recording a harness event failed');
        }
      }
    } catch (err) {
      this.deps.log.warn({ err, turnId: this.turnId }, 'reading the CLI output failed');
    }
    return { mapper, result };
  }

  private async emit(e: DriverEvent): Promise<void> {
    const { type, ...payload } = e;
    if (type === 'APPROVAL_REQUEST') {
      await this.deps.store.requestApprovals(this.record!.id, this.turnId, [payload as { requestId: string; toolName: string; input: unknown; reason: string }]);
    } else if (type === 'PROMPT_REQUEST') {
      await this.deps.store.requestPrompt(this.record!.id, this.turnId, payload as HarnessEventPayloads['PROMPT_REQUEST']);
    } else {
      await this.deps.store.append(this.record!.id, type, payload as never, this.turnId);
    }
  }

  /** The session id the CLI announced: a task's new session recorded (lease held), or a rotation. */
  private async announce(nativeId: string): Promise<void> {
    const { store, settings, log } = this.deps;
    const { driver, task, turnId } = this;
    if (!isNativeIdOf(driver.harnessId, nativeId)) {
      log.warn({ harnessId: driver.harnessId, nativeId }, 'the CLI announced a session id of an unexpected shape; ignored');
      return;
    }
    const id = formatSessionId(driver.harnessId, nativeId);
    if (!this.record) {
      const created = await store.create(
        { id, harnessId: driver.harnessId, nativeId, projectId: task?.projectId ?? null, workspaceId: null, cwd: task?.cwd ?? null, title: null, origin: 'task', taskId: task?.id ?? null },
        { turnId, holder: this.opts.holder, leaseMs: settings.leaseMs },
      );
      this.record = created.created ? created.record : (await store.acquireTurn(id, turnId, this.opts.holder, settings.leaseMs)).record;
      await store.setTurnPgid(id, turnId, this.proc.pgid);
      if (task) await store.setTaskSession(task.id, id);
    } else if (id !== this.record.id) {
      // Rotation: the CLI continues the session under a new id.
      this.record = await store.rotate(this.record, { id, nativeId });
    } else {
      return;
    }
    this.sessionId = this.record.id;
    for (const e of this.pending.splice(0)) await this.emit(e);
  }

  /** How the turn ended: TurnComplete with the transcript entries it added. */
  private async settle(exit: GroupExit, followed: { mapper: ReturnType<CliDriver['mapper']>; result: TurnResult | undefined }): Promise<TurnOutcome> {
    const { store, settings, log } = this.deps;
    const { proc, turnId, record } = this;
    const result = followed.result ?? followed.mapper.finish?.();
    const status: TurnStatus = this.interrupted ? 'INTERRUPTED' : !this.timedOut && exit.code === 0 && result?.ok !== false ? 'COMPLETED' : 'FAILED';
    const error =
      status === 'COMPLETED'
        ? null
        : this.interrupted
          ? 'interrupted'
          : this.timedOut
            ? `the turn ran longer than ${settings.turnTimeoutMs} ms and was stopped`
            : result?.error ?? `the CLI exited with ${exit.code ?? exit.signal}${proc.stderr().trim() ? `: ${proc.stderr().trim().slice(-400)}` : ''}`;
    const outcome: TurnOutcome = { sessionId: record?.id ?? null, turnId, status, result: result?.text ?? null, error };
    if (!record) {
      outcome.status = this.interrupted ? 'INTERRUPTED' : 'FAILED';
      outcome.error ??= `the ${this.driver.harnessId} CLI exited before announcing its session`;
      return outcome;
    }
    this.driver.touched();
    await this.announceTranscript(record).catch((err: unknown) => log.warn({ err }, 'announcing transcript entries failed'));
    await store.completeTurn(record.id, turnId, {
      status,
      exitCode: exit.code,
      error: error ? clipText(error, 500).text : null,
      result: result?.text ? clipText(result.text).text : null,
      durationMs: Date.now() - this.started,
    });
    return outcome;
  }

  /** TRANSCRIPT_APPENDED for entries the native store holds beyond those announced so far. */
  private async announceTranscript(record: SessionRecord): Promise<void> {
    const entries = await this.deps.drivers[record.harnessId].transcript(record.nativeId);
    const current = await this.deps.store.get(record.id);
    const from = current?.announcedEntries ?? 0;
    if (entries.length <= from) return;
    await this.deps.store.announceEntries(record.id, entries.slice(from).map((e) => e.id), entries.length, this.turnId);
  }
}

/**
 * The turns running in this process: each takes its session's durable lease (TURN_IN_FLIGHT
 * across processes), spawns its CLI in its own process group and is followed until it settles.
 */
export class Turns {
  private readonly local = new Map<string, Turn>();
  /** Starts in progress (lease taken, CLI spawning): `stop()` waits for them, then ends their turns too. */
  private readonly starting = new Set<Promise<Turn>>();
  private stopped = false;

  constructor(private readonly deps: TurnDeps) {}

  /**
   * Takes the lease, spawns the CLI and follows it in the background.
   * @throws MeshError SERVICE_UNAVAILABLE once this process is stopping (a retry goes to another)
   */
  start(record: SessionRecord, cwd: string, opts: TurnOptions): Promise<Turn> {
    return this.admit(() => this.begin(record, cwd, opts));
  }

  /** Runs a start unless this process is stopping; a start `stop()` finds in progress is waited for and its turn ended. */
  private async admit(begin: () => Promise<Turn>): Promise<Turn> {
    if (this.stopped) throw new MeshError('SERVICE_UNAVAILABLE', 'this process is stopping and starts no turn; send it again');
    const started = begin();
    this.starting.add(started);
    try {
      return await started;
    } finally {
      this.starting.delete(started);
    }
  }

  private async begin(record: SessionRecord, cwd: string, opts: TurnOptions): Promise<Turn> {
    const { store, drivers, settings, log } = this.deps;
    const driver = drivers[record.harnessId];
    const turnId = opts.turnId ?? randomUUID();
    const { lost } = await store.acquireTurn(record.id, turnId, opts.holder, settings.leaseMs);
    if (lost) {
      await store
        .append(record.id, 'TURN_COMPLETE', { status: 'LOST', error: 'the process running this turn stopped renewing its lease' }, lost)
        .catch((err: unknown) => log.warn({ err }, 'recording a lost turn failed'));
    }
    let proc: GroupProcess;
    // A CLI with a permission hook asks before a tool runs, where this process serves the endpoint.
    const gate = this.deps.permissions;
    const hook = driver.features.permissionHook && gate?.url ? { url: gate.url, ...gate.open(record.id, turnId) } : undefined;
    try {
      // The turn's own model and effort, else the session's (startSession's), else the CLI's.
      const chosen = { ...opts, model: opts.model ?? record.model, effort: opts.effort ?? record.effort, ...(hook ? { permissionPrompt: { url: hook.url, secret: hook.secret } } : {}) };
      proc = await this.spawn(driver, { nativeId: record.nativeId, cwd, opts: chosen, env: { KEELSON_SESSION_ID: record.id, ...(opts.taskId ? { KEELSON_TASK_ID: opts.taskId } : {}) } });
    } catch (err) {
      hook?.close();
      const message = (err as Error).message;
      await store.completeTurn(record.id, turnId, { status: 'FAILED', error: clipText(message, 500).text });
      throw err instanceof MeshError ? err : new MeshError('UPSTREAM_FAILED', `${record.harnessId}: the CLI could not be started (${message})`);
    }
    // Followed from the moment it runs (its lease renewed, its timeout armed, its output read); the
    // process group on the record is for operators, and a failure to write it does not orphan the CLI.
    const turn = this.follow(new Turn(this.deps, driver, proc, turnId, record, { ...opts, ...(hook ? { permissionPrompt: { url: hook.url, secret: hook.secret } } : {}) }));
    if (hook) void turn.done.finally(hook.close).catch(() => undefined);
    await store.setTurnPgid(record.id, turnId, proc.pgid).catch((err: unknown) => log.warn({ err, sessionId: record.id, turnId }, "recording the turn's process group failed; the turn runs on"));
    return turn;
  }

  /**
   * A turn of a session the CLI mints itself (codex, opencode): no lease can exist before the id is
   * known, so the task's lease guards it; the session is recorded, lease held, when announced.
   */
  startNewSession(task: TaskRecord, cwd: string, opts: TurnOptions): Promise<Turn> {
    return this.admit(async () => {
      const driver = this.deps.drivers[task.harnessId];
      const proc = await this.spawn(driver, { nativeId: null, cwd, opts: { ...opts, attachments: [], allowTools: [] }, env: { KEELSON_TASK_ID: task.id } });
      return this.follow(new Turn(this.deps, driver, proc, randomUUID(), null, opts, task));
    });
  }

  /** The CLI of one turn, confined to `cwd`, in its own process group. */
  private async spawn(driver: CliDriver, spec: { nativeId: string | null; cwd: string; opts: TurnOptions; env: Record<string, string> }): Promise<GroupProcess> {
    const { nativeId, cwd, opts } = spec;
    const bin = await driver.requireBinary();
    await driver.prepare();
    const fresh = nativeId === null || (driver.features.pinning === 'session-id' && !(await driver.hasNative(nativeId)));
    const cmd = await driver.confine(
      await driver.command(bin.path, {
        nativeId,
        fresh,
        cwd,
        text: opts.text,
        attachments: opts.attachments,
        allowTools: opts.allowTools,
        ...(opts.model ? { model: opts.model } : {}),
        ...(opts.effort ? { effort: opts.effort } : {}),
        ...(opts.permissionPrompt ? { permissionPrompt: opts.permissionPrompt } : {}),
        // TRACEPARENT: the CLI's turn continues the caller's trace (nothing while tracing is off).
        env: { ...spec.env, ...traceparentEnv() },
      }),
      cwd,
      opts.attachments,
    );
    return startGroupProcess({ argv: cmd.argv, cwd, env: cmd.env });
  }

  private follow(turn: Turn): Turn {
    const settled = turn.done.finally(() => this.local.delete(turn.turnId));
    settled.catch((err: unknown) => this.deps.log.error({ err, turnId: turn.turnId }, 'a turn ended abnormally'));
    this.local.set(turn.turnId, turn);
    return turn;
  }

  /** The turn this process runs for a session, if any. */
  ofSession(sessionId: string): Turn | undefined {
    return [...this.local.values()].find((t) => t.sessionId === sessionId);
  }

  /**
   * Ends the session's in-flight turn: its whole process group is killed and TurnComplete
   * (INTERRUPTED) follows. A turn held by another process is flagged; its holder kills it within
   * about a second. Resolves true once the turn ended, false when none was in flight.
   */
  async interruptSession(record: SessionRecord): Promise<boolean> {
    const local = this.ofSession(record.id);
    if (local) {
      await local.interrupt();
      await local.done.catch(() => undefined);
      return true;
    }
    const held = await this.deps.store.requestInterrupt(record.id);
    if (!held) return false;
    const deadline = Date.now() + this.deps.settings.leaseMs + 5000;
    while (Date.now() < deadline) {
      const now = await this.deps.store.get(record.id);
      if (!now || now.turnId !== held.turnId) return true;
      await new Promise((r) => setTimeout(r, 100));
    }
    return true;
  }

  /**
   * Runs the turn `start` begins under an activity's control: `beat` every second (the heartbeat),
   * the turn interrupted when `ctl.signal` aborts (Temporal's cancellation).
   */
  async drive(ctl: TurnControl, beat: (turn: Turn | undefined) => void, start: () => Promise<Turn>): Promise<TurnOutcome> {
    let turn: Turn | undefined;
    const timer = setInterval(() => beat(turn), 1000);
    const onAbort = () => {
      if (turn) void turn.interrupt();
    };
    ctl.signal.addEventListener('abort', onAbort);
    try {
      turn = await start();
      if (ctl.signal.aborted) onAbort();
      return await turn.done;
    } finally {
      clearInterval(timer);
      ctl.signal.removeEventListener('abort', onAbort);
    }
  }

  /** Kills every turn this process runs, those being started included, and starts none from now on (shutdown). */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await Promise.allSettled([...this.starting]);
    await Promise.all(
      [...this.local.values()].map(async (t) => {
        await t.interrupt();
        await t.done.catch(() => undefined);
      }),
    );
  }

  /** Turns running in this process (operators and tests). */
  list(): { turnId: string; sessionId: string | null; pgid: number }[] {
    return [...this.local.values()].map((t) => ({ turnId: t.turnId, sessionId: t.sessionId, pgid: t.proc.pgid }));
  }
}
