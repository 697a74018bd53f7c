import type { EventNotifier } from '@keelson/platform';
import { randomUUID } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { decodeCursor, MeshError, streams, type ApprovalDecision, type RunStatus, type TurnStatus } from '@keelson/schema';
import { traceparentEnv, type Logger } from '@keelson/service';
import type { DataSource } from 'typeorm';
import { confinedPath, realpathDeep } from '../confine';
import type { CapabilityReport, DriverEvent, HarnessDriver, HarnessEvent, SessionSummary, TaskExecutorInfo, TranscriptEntry } from '../contract';
import { clipText } from '../drivers/clip';
import type { CliDriver, TurnResult } from '../drivers/cliDriver';
import { classifySessionRef, formatSessionId, isNativeIdOf, requireHarnessId, requireSessionId, type HarnessId, type SessionId } from '../ids';
import { startGroupProcess, type GroupProcess } from '../process/groupProcess';
import type { DriverRegistry } from '../registry';
import type { HarnessSettings } from '../settings';
import type { ProjectInfo, ProjectsApi } from './projects';
import { HOST, type HarnessStore, type SessionRecord, type TaskRecord } from './store';
import { followHarnessEvents, type HarnessEventTail, type HarnessTailFilter } from './tail';

/** A session as the mesh shows it: what it recorded, what the native store says, or both. */
export interface SessionView {
  id: SessionId;
  harnessId: HarnessId;
  nativeId: string;
  record: SessionRecord | null;
  native: SessionSummary | null;
}

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

/** Where a turn runs: a project's root or one of its live worktree leases (realpath). */
interface Place {
  cwd: string;
  projectId: string;
  workspaceId: string | null;
}

/** A turn running in this process. */
interface LocalTurn {
  turnId: string;
  sessionId: SessionId | null;
  proc: GroupProcess;
  interrupted: boolean;
  timedOut: boolean;
  done: Promise<TurnOutcome>;
}

interface TurnOptions {
  text: string;
  attachments: string[];
  allowTools: string[];
  holder: string;
  taskId: string | null;
  /** The turn's id when the caller fixes it (a steer's); a fresh UUID otherwise. */
  turnId?: string;
}

/** How an activity drives a turn it runs: its attempt, Temporal's cancellation and heartbeat. */
export interface TurnControl {
  attempt: number;
  signal: AbortSignal;
  heartbeat: (details: unknown) => void;
}

export interface ControlPlaneOptions {
  store: HarnessStore;
  drivers: DriverRegistry;
  projects: ProjectsApi;
  settings: HarnessSettings;
  dataSource: DataSource;
  notifier: EventNotifier;
  log: Logger;
}

/** Opaque transcript cursor: a position in the native transcript (append-only). */
function transcriptCursor(index: number): string {
  return Buffer.from(`transcript:${index}`, 'utf8').toString('base64url');
}

function decodeTranscriptCursor(after: string): number {
  const m = /^transcript:(0|[1-9][0-9]{0,8})$/.exec(Buffer.from(after, 'base64url').toString('utf8'));
  if (!m || transcriptCursor(Number(m[1])) !== after) throw new MeshError('BAD_USER_INPUT', 'after: expected a cursor previously received from this transcript');
  return Number(m[1]);
}

const taskStatusOf: Record<TurnStatus, RunStatus> = { COMPLETED: 'SUCCEEDED', INTERRUPTED: 'CANCELLED', FAILED: 'FAILED', LOST: 'FAILED' };

/**
 * The harness control plane: identity (SessionIds, bare-id probe, aliases), sessions from the
 * native stores and the mesh, turns with a durable lease per session (TURN_IN_FLIGHT across
 * processes), interrupt by process group, approvals, tasks, and every HarnessEvent in the event log
 * with a per-session sequence. One per process (the sessions subgraph and the worker each have one);
 * everything shared lives in Postgres.
 */
export class HarnessControlPlane {
  readonly drivers: DriverRegistry;
  readonly store: HarnessStore;
  private readonly projects: ProjectsApi;
  private readonly settings: HarnessSettings;
  private readonly log: Logger;
  private readonly dataSource: DataSource;
  private readonly notifier: EventNotifier;
  private readonly local = new Map<string, LocalTurn>();
  private stopped = false;

  constructor(opts: ControlPlaneOptions) {
    this.drivers = opts.drivers;
    this.store = opts.store;
    this.projects = opts.projects;
    this.settings = opts.settings;
    this.log = opts.log;
    this.dataSource = opts.dataSource;
    this.notifier = opts.notifier;
  }

  driver(harnessId: string): CliDriver {
    return this.drivers[requireHarnessId(harnessId)];
  }

  capabilities(harnessId: HarnessId): Promise<CapabilityReport> {
    return this.drivers[harnessId].report();
  }

  taskExecutor(harnessId: HarnessId): Promise<TaskExecutorInfo> {
    return this.drivers[harnessId].taskExecutor();
  }

  /** CAPABILITY_UNSUPPORTED with the capability's reason unless `harnessId` has it now. */
  private async require(harnessId: HarnessId, capability: keyof CapabilityReport['flags'], op: string): Promise<CapabilityReport> {
    const report = await this.capabilities(harnessId);
    if (!report.flags[capability]) {
      throw new MeshError('CAPABILITY_UNSUPPORTED', `${op} is not supported for ${harnessId}: ${report.reasons[capability] ?? `${capability} is unavailable`}`, { harnessId, capability });
    }
    return report;
  }

  // ---- identity -------------------------------------------------------------------------------

  /**
   * What `raw` names, by the seed's rules: a canonical SessionId (a superseded one resolves to its
   * successor), or a bare UUID probed across the UUID-shaped stores in order (the mesh's record or
   * the native store; first hit wins). Null when nothing holds it.
   * @throws MeshError BAD_USER_INPUT for malformed ids.
   */
  async resolve(raw: string, field = 'sessionId'): Promise<SessionView | null> {
    const ref = classifySessionRef(raw, field);
    if (ref.kind === 'canonical') {
      const target = await this.store.resolveAlias(ref.parsed.sessionId);
      const parsed = requireSessionId(target, field);
      return this.view(parsed.sessionId, parsed.harnessId, parsed.nativeId);
    }
    for (const harnessId of ref.probe) {
      const id = formatSessionId(harnessId, ref.nativeId);
      const target = await this.store.resolveAlias(id);
      const parsed = requireSessionId(target, field);
      const found = await this.view(parsed.sessionId, parsed.harnessId, parsed.nativeId);
      if (found) return found;
    }
    return null;
  }

  /** {@link resolve}, NOT_FOUND when nothing holds the id. */
  async requireSession(raw: string, field = 'sessionId'): Promise<SessionView> {
    const found = await this.resolve(raw, field);
    if (!found) throw new MeshError('NOT_FOUND', `${field}: no session ${JSON.stringify(raw)} in the mesh or in its harness's store`);
    return found;
  }

  /** The mesh's record of a session, else what its native store holds (only looked up without a record). */
  /**
   * The session an operation names, its harness's capability checked first: an operation the
   * harness cannot do is CAPABILITY_UNSUPPORTED (501) whether or not the session exists.
   */
  private async sessionFor(raw: string, capability: keyof CapabilityReport['flags'], op: string): Promise<{ view: SessionView; report: CapabilityReport }> {
    const ref = classifySessionRef(raw);
    if (ref.kind === 'canonical') await this.require(ref.parsed.harnessId, capability, op);
    const view = await this.requireSession(raw);
    return { view, report: await this.require(view.harnessId, capability, op) };
  }

  private async view(id: SessionId, harnessId: HarnessId, nativeId: string): Promise<SessionView | null> {
    const record = await this.store.get(id);
    const driver = this.drivers[harnessId];
    const native = !record && driver.implemented ? await driver.findNative(nativeId).catch(() => null) : null;
    if (!record && !native) return null;
    return { id, harnessId, nativeId, record, native };
  }

  // ---- sessions -------------------------------------------------------------------------------

  /** Sessions the mesh recorded plus what every native store holds, newest first; rotated ids retired. */
  async listSessions(filter: { harnessId?: HarnessId | null; projectId?: string | null }): Promise<SessionView[]> {
    const records = await this.store.list(filter);
    const views = new Map<string, SessionView>(records.map((r) => [r.id, { id: r.id, harnessId: r.harnessId, nativeId: r.nativeId, record: r, native: null }]));
    const ids = filter.harnessId ? [filter.harnessId] : (Object.keys(this.drivers) as HarnessId[]);
    let roots: string[] | null = null;
    if (filter.projectId) {
      const project = await this.projects.project(filter.projectId);
      roots = project ? await this.rootsOf(project) : [];
    }
    for (const harnessId of ids) {
      const driver = this.drivers[harnessId];
      if (!driver.implemented || !(await driver.locate())) continue;
      let natives: SessionSummary[];
      try {
        natives = await driver.listNative();
      } catch (err) {
        this.log.warn({ err, harnessId }, 'listing a native session store failed');
        continue;
      }
      for (const n of natives) {
        const existing = views.get(n.sessionId);
        if (existing) {
          existing.native = n;
          continue;
        }
        if (roots && !(n.cwd && roots.includes(await realpathDeep(n.cwd)))) continue;
        if ((await this.store.resolveAlias(n.sessionId)) !== n.sessionId) continue;
        views.set(n.sessionId, { id: n.sessionId, harnessId: n.harnessId, nativeId: n.nativeId, record: null, native: n });
      }
    }
    const updated = (v: SessionView) => Math.max(v.record?.updatedAt.getTime() ?? 0, v.native?.updatedAt?.getTime() ?? 0);
    return [...views.values()].sort((a, b) => updated(b) - updated(a) || a.id.localeCompare(b.id));
  }

  /** A new session with an id the mesh pins (claude-code, qwen-code `--session-id`; pi by file path). */
  async startSession(harnessIdRaw: string, input: { projectId: string; workspaceId?: string | null; title?: string | null }): Promise<SessionRecord> {
    const harnessId = requireHarnessId(harnessIdRaw);
    await this.require(harnessId, 'startSession', 'startSession');
    const driver = this.drivers[harnessId];
    const place = await this.placeFor(input.projectId, input.workspaceId ?? null);
    await driver.prepare();
    const nativeId = driver.newNativeId();
    await driver.pin(nativeId, place.cwd);
    const { record } = await this.store.create({
      id: formatSessionId(harnessId, nativeId),
      harnessId,
      nativeId,
      projectId: place.projectId,
      workspaceId: place.workspaceId,
      cwd: place.cwd,
      title: input.title ?? null,
      origin: 'started',
      taskId: null,
    });
    return record;
  }

  /** Makes a session the mesh's: one it knows, or one found in its harness's native store (adopted). */
  async resumeSession(raw: string): Promise<SessionRecord> {
    const { view } = await this.sessionFor(raw, 'resume', 'resumeSession');
    return view.record ?? this.adopt(view);
  }

  /**
   * Records a native session, placing it in the project whose root (or worktree) is its cwd. With
   * `forTurn`, a session outside every project is refused before anything is recorded.
   */
  private async adopt(view: SessionView, forTurn = false): Promise<SessionRecord> {
    const n = view.native!;
    let place: Place | null = null;
    if (n.cwd) {
      const cwd = await realpathDeep(n.cwd);
      for (const project of await this.projects.projects()) {
        if ((await realpathDeep(project.rootPath)) === cwd) place = { cwd, projectId: project.id, workspaceId: null };
        for (const ws of project.workspaces) if ((await realpathDeep(ws.path)) === cwd) place = { cwd, projectId: project.id, workspaceId: ws.id };
        if (place) break;
      }
    }
    if (forTurn && !place) {
      throw new MeshError('FORBIDDEN', `session ${view.id} ran in ${n.cwd ?? 'an unknown directory'}, which is neither a project root nor a leased worktree; turns run only inside a project`);
    }
    const { record } = await this.store.create({
      id: view.id,
      harnessId: view.harnessId,
      nativeId: view.nativeId,
      projectId: place?.projectId ?? null,
      workspaceId: place?.workspaceId ?? null,
      cwd: place?.cwd ?? n.cwd,
      title: n.title,
      origin: 'adopted',
      taskId: null,
    });
    return record;
  }

  private async rootsOf(project: ProjectInfo): Promise<string[]> {
    return Promise.all([project.rootPath, ...project.workspaces.map((w) => w.path)].map((p) => realpathDeep(p)));
  }

  /** A project's root, or one of its live worktree leases, resolved through symlinks. */
  private async placeFor(projectId: string, workspaceId: string | null): Promise<Place> {
    const project = await this.projects.project(projectId);
    if (!project) throw new MeshError('NOT_FOUND', `projectId: no project ${projectId}`);
    let dir = project.rootPath;
    if (workspaceId) {
      const ws = project.workspaces.find((w) => w.id === workspaceId);
      if (!ws) throw new MeshError('NOT_FOUND', `workspaceId: ${workspaceId} is not a live workspace lease of project ${project.name}`);
      dir = ws.path;
    }
    const cwd = await realpathDeep(dir);
    const st = await stat(cwd).catch(() => null);
    if (!st?.isDirectory()) throw new MeshError('NOT_FOUND', `the directory ${dir} of project ${project.name} does not exist`);
    return { cwd, projectId: project.id, workspaceId };
  }

  /**
   * Confinement: a session's turns run only in its project's root or a live worktree lease of it,
   * checked (realpath) before every turn.
   */
  private async cwdOf(record: SessionRecord): Promise<string> {
    if (!record.projectId) {
      throw new MeshError('FORBIDDEN', `session ${record.id} runs in ${record.cwd ?? 'an unknown directory'}, which is neither a project root nor a leased worktree; turns run only inside a project`);
    }
    let place: Place;
    try {
      place = await this.placeFor(record.projectId, record.workspaceId);
    } catch (err) {
      if (err instanceof MeshError && err.code === 'NOT_FOUND') {
        throw new MeshError('FORBIDDEN', `session ${record.id} cannot run: ${err.message.replace(/^[a-zA-Z]+: /, '')}`);
      }
      throw err;
    }
    if (record.cwd && (await realpathDeep(record.cwd)) !== place.cwd) {
      throw new MeshError('FORBIDDEN', `session ${record.id} was started in ${record.cwd}, which is no longer its project's directory (${place.cwd})`);
    }
    return place.cwd;
  }

  // ---- turns ----------------------------------------------------------------------------------

  /**
   * Runs one headless turn resuming the session's native session; resolves once the CLI is running
   * (its events follow on the `harness` stream, ending with TurnComplete).
   * @throws TURN_IN_FLIGHT while another turn holds the session (in any process),
   *   CAPABILITY_UNSUPPORTED (attachments, a harness without a driver), FORBIDDEN (confinement).
   */
  async sendUserTurn(raw: string, text: string, attachments: string[] = []): Promise<TurnAccepted> {
    const { view, report } = await this.sessionFor(raw, 'resume', 'sendUserTurn');
    if (attachments.length && !report.flags.attachments) {
      throw new MeshError('CAPABILITY_UNSUPPORTED', `attachments are not supported for ${view.harnessId}: ${report.reasons.attachments}`, { harnessId: view.harnessId, capability: 'attachments' });
    }
    const record = view.record ?? (await this.adopt(view, true));
    const cwd = await this.cwdOf(record);
    const files: string[] = [];
    for (const a of attachments) {
      const real = await confinedPath(cwd, a, 'attachment');
      const st = await stat(real).catch(() => null);
      if (!st?.isFile()) throw new MeshError('BAD_USER_INPUT', `attachments: ${JSON.stringify(a)} is not a file in ${cwd}`);
      files.push(real);
    }
    const turn = await this.startTurn(record, cwd, { text, attachments: files, allowTools: [], holder: `turn:${HOST}:${process.pid}`, taskId: record.taskId });
    turn.done.catch(() => undefined);
    return { sessionId: record.id, turnId: turn.turnId, acceptedAt: new Date() };
  }

  /** Takes the lease, spawns the CLI and follows it in the background. */
  private async startTurn(record: SessionRecord, cwd: string, opts: TurnOptions): Promise<LocalTurn> {
    const driver = this.drivers[record.harnessId];
    const turnId = opts.turnId ?? randomUUID();
    const { lost } = await this.store.acquireTurn(record.id, turnId, opts.holder, this.settings.leaseMs);
    if (lost) {
      await this.store
        .append(record.id, 'TURN_COMPLETE', { status: 'LOST', error: 'the process running this turn stopped renewing its lease' }, lost)
        .catch((err: unknown) => this.log.warn({ err }, 'recording a lost turn failed'));
    }
    let proc: GroupProcess;
    try {
      const bin = await driver.requireBinary();
      await driver.prepare();
      const fresh = driver.features.pinning === 'session-id' && !(await driver.hasNative(record.nativeId));
      const cmd = await driver.confine(
        await driver.command(bin.path, {
          nativeId: record.nativeId,
          fresh,
          cwd,
          text: opts.text,
          attachments: opts.attachments,
          allowTools: opts.allowTools,
          // TRACEPARENT: the CLI's turn continues the caller's trace (nothing while tracing is off).
          env: { KEELSON_SESSION_ID: record.id, ...(opts.taskId ? { KEELSON_TASK_ID: opts.taskId } : {}), ...traceparentEnv() },
        }),
        cwd,
      );
      proc = startGroupProcess({ argv: cmd.argv, cwd, env: cmd.env });
    } catch (err) {
      const message = (err as Error).message;
      await this.store.completeTurn(record.id, turnId, { status: 'FAILED', error: clipText(message, 500).text });
      throw err instanceof MeshError ? err : new MeshError('UPSTREAM_FAILED', `${record.harnessId}: the CLI could not be started (${message})`);
    }
    await this.store.setTurnPgid(record.id, turnId, proc.pgid);
    return this.follow(driver, proc, turnId, record, opts);
  }

  /**
   * A turn of a session the CLI mints itself (codex, opencode): no lease can exist before the id is
   * known, so the task's lease guards it; the session is recorded, lease held, when announced.
   */
  private async startNewSessionTurn(driver: CliDriver, task: TaskRecord, opts: TurnOptions): Promise<LocalTurn> {
    // Confinement, checked again at each attempt: the project's root is still where it was.
    if (!task.projectId || (await this.placeFor(task.projectId, null)).cwd !== (await realpathDeep(task.cwd))) {
      throw new MeshError('FORBIDDEN', `task ${task.id}: ${task.cwd} is no longer its project's root`);
    }
    const bin = await driver.requireBinary();
    await driver.prepare();
    const cmd = await driver.confine(
      await driver.command(bin.path, {
        nativeId: null,
        fresh: true,
        cwd: task.cwd,
        text: opts.text,
        attachments: [],
        allowTools: [],
        env: { KEELSON_TASK_ID: task.id, ...traceparentEnv() },
      }),
      task.cwd,
    );
    const proc = startGroupProcess({ argv: cmd.argv, cwd: task.cwd, env: cmd.env });
    return this.follow(driver, proc, randomUUID(), null, opts, task);
  }

  private follow(driver: CliDriver, proc: GroupProcess, turnId: string, initial: SessionRecord | null, opts: TurnOptions, task?: TaskRecord): LocalTurn {
    const started = Date.now();
    const turn: LocalTurn = { turnId, sessionId: initial?.id ?? null, proc, interrupted: false, timedOut: false, done: Promise.resolve(null as never) };
    let record = initial;
    const pending: DriverEvent[] = [];
    let renewing = false;

    const emit = async (e: DriverEvent) => {
      const { type, ...payload } = e;
      if (type === 'APPROVAL_REQUEST') {
        await this.store.requestApprovals(record!.id, turnId, [payload as { requestId: string; toolName: string; input: unknown; reason: string }]);
      } else {
        await this.store.append(record!.id, type, payload as never, turnId);
      }
    };

    const announce = async (nativeId: string) => {
      if (!isNativeIdOf(driver.harnessId, nativeId)) {
        this.log.warn({ harnessId: driver.harnessId, nativeId }, 'the CLI announced a session id of an unexpected shape; ignored');
        return;
      }
      const id = formatSessionId(driver.harnessId, nativeId);
      if (!record) {
        const created = await this.store.create(
          { id, harnessId: driver.harnessId, nativeId, projectId: task?.projectId ?? null, workspaceId: null, cwd: task?.cwd ?? null, title: null, origin: 'task', taskId: task?.id ?? null },
          { turnId, holder: opts.holder, leaseMs: this.settings.leaseMs },
        );
        record = created.created ? created.record : (await this.store.acquireTurn(id, turnId, opts.holder, this.settings.leaseMs)).record;
        await this.store.setTurnPgid(id, turnId, proc.pgid);
        if (task) await this.store.setTaskSession(task.id, id);
      } else if (id !== record.id) {
        // Rotation: the CLI continues the session under a new id.
        record = await this.store.rotate(record, { id, nativeId });
      } else {
        return;
      }
      turn.sessionId = record.id;
      for (const e of pending.splice(0)) await emit(e);
    };

    const renew = setInterval(() => {
      if (!record || renewing) return;
      renewing = true;
      this.store
        .renewTurn(record.id, turnId, this.settings.leaseMs)
        .then((r) => {
          if (!r.held) {
            this.log.warn({ sessionId: record?.id, turnId }, 'turn lease lost; stopping the CLI so two turns never run at once');
            void proc.kill(this.settings.killGraceMs);
          } else if (r.interruptRequested && !turn.interrupted) {
            void this.interruptLocal(turn);
          }
        })
        .catch((err: unknown) => this.log.warn({ err }, 'renewing a turn lease failed'))
        .finally(() => (renewing = false));
    }, 1000);
    const timeout = setTimeout(() => {
      turn.timedOut = true;
      void proc.kill(this.settings.killGraceMs);
    }, this.settings.turnTimeoutMs);

    turn.done = (async (): Promise<TurnOutcome> => {
      const mapper = driver.mapper();
      let result: TurnResult | undefined;
      try {
        for await (const line of proc.lines) {
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
            if (out.nativeId) await announce(out.nativeId);
            for (const e of out.events) {
              if (record) await emit(e);
              else pending.push(e);
            }
            if (out.result) result = out.result;
          } catch (err) {
            this.log.warn({ err, turnId }, 'recording a harness event failed');
          }
        }
      } catch (err) {
        this.log.warn({ err, turnId }, 'reading the CLI output failed');
      }
      const exit = await proc.exited;
      clearInterval(renew);
      clearTimeout(timeout);
      result ??= mapper.finish?.();
      const status: TurnStatus = turn.interrupted ? 'INTERRUPTED' : !turn.timedOut && exit.code === 0 && result?.ok !== false ? 'COMPLETED' : 'FAILED';
      const error =
        status === 'COMPLETED'
          ? null
          : turn.interrupted
            ? 'interrupted'
            : turn.timedOut
              ? `the turn ran longer than ${this.settings.turnTimeoutMs} ms and was stopped`
              : result?.error ?? `the CLI exited with ${exit.code ?? exit.signal}${proc.stderr().trim() ? `: ${proc.stderr().trim().slice(-400)}` : ''}`;
      const outcome: TurnOutcome = { sessionId: record?.id ?? null, turnId, status, result: result?.text ?? null, error };
      try {
        if (!record) {
          outcome.status = turn.interrupted ? 'INTERRUPTED' : 'FAILED';
          outcome.error ??= `the ${driver.harnessId} CLI exited before announcing its session`;
          return outcome;
        }
        driver.touched();
        await this.announceTranscript(record, turnId).catch((err: unknown) => this.log.warn({ err }, 'announcing transcript entries failed'));
        await this.store.completeTurn(record.id, turnId, {
          status,
          exitCode: exit.code,
          error: error ? clipText(error, 500).text : null,
          result: result?.text ? clipText(result.text).text : null,
          durationMs: Date.now() - started,
        });
        return outcome;
      } finally {
        this.local.delete(turnId);
      }
    })();
    turn.done.catch((err: unknown) => this.log.error({ err, turnId }, 'a turn ended abnormally'));
    this.local.set(turnId, turn);
    return turn;
  }

  /** TRANSCRIPT_APPENDED for entries the native store holds beyond those announced so far. */
  private async announceTranscript(record: SessionRecord, turnId: string): Promise<void> {
    const entries = await this.drivers[record.harnessId].transcript(record.nativeId);
    const current = await this.store.get(record.id);
    const from = current?.announcedEntries ?? 0;
    if (entries.length <= from) return;
    await this.store.announceEntries(record.id, entries.slice(from).map((e) => e.id), entries.length, turnId);
  }

  private async interruptLocal(turn: LocalTurn): Promise<void> {
    turn.interrupted = true;
    await turn.proc.kill(this.settings.killGraceMs);
  }

  /**
   * Ends the session's in-flight turn: its whole process group is killed and TurnComplete
   * (INTERRUPTED) follows. A turn held by another process is flagged; its holder kills it within
   * about a second. Resolves true once the turn ended, false when none was in flight.
   */
  async interruptSession(raw: string): Promise<boolean> {
    const { view } = await this.sessionFor(raw, 'interrupt', 'interruptSession');
    if (!view.record) return false;
    const local = [...this.local.values()].find((t) => t.sessionId === view.record!.id);
    if (local) {
      await this.interruptLocal(local);
      await local.done.catch(() => undefined);
      return true;
    }
    const held = await this.store.requestInterrupt(view.record.id);
    if (!held) return false;
    const deadline = Date.now() + this.settings.leaseMs + 5000;
    while (Date.now() < deadline) {
      const now = await this.store.get(view.record.id);
      if (!now || now.turnId !== held.turnId) return true;
      await new Promise((r) => setTimeout(r, 100));
    }
    return true;
  }

  /**
   * Answers a permission request the CLI reported. APPROVE re-runs the session with the tool
   * allowed for that turn and tells the CLI to retry it; DENY records the answer (the CLI already
   * went on without the tool).
   */
  async resolveApproval(raw: string, requestId: string, decision: ApprovalDecision): Promise<boolean> {
    const { view } = await this.sessionFor(raw, 'approvals', 'resolveApproval');
    const record = view.record;
    if (!record) throw new MeshError('NOT_FOUND', `session ${view.id} has no approval request ${requestId}`);
    const pending = (await this.store.approvals(record.id)).find((a) => a.requestId === requestId);
    if (!pending) throw new MeshError('NOT_FOUND', `session ${record.id} has no approval request ${requestId}`);
    if (pending.status !== 'pending') throw new MeshError('CONFLICT', `approval request ${requestId} was already answered (${pending.status})`);
    let cwd: string | null = null;
    if (decision === 'APPROVE') {
      cwd = await this.cwdOf(record);
      if (record.turnId && record.turnExpiresAt && record.turnExpiresAt.getTime() > Date.now()) {
        throw new MeshError('TURN_IN_FLIGHT', `session ${record.id} has a turn in flight (turn ${record.turnId}); answer the approval once it completed`, { turnId: record.turnId });
      }
    }
    await this.store.resolveApproval(record.id, requestId, decision);
    if (decision === 'APPROVE') {
      const input = pending.toolInput as Record<string, unknown> | null;
      const command = input && typeof input.command === 'string' ? input.command : null;
      const allow = pending.toolName === 'Bash' && command ? `Bash(${command})` : pending.toolName;
      const turn = await this.startTurn(record, cwd!, {
        text: `The user approved your ${pending.toolName} call (${JSON.stringify(input)}). Run it again now, exactly as before.`,
        attachments: [],
        allowTools: [allow],
        holder: `approval:${HOST}:${process.pid}`,
        taskId: record.taskId,
      });
      turn.done.catch(() => undefined);
    }
    return true;
  }

  // ---- transcripts ----------------------------------------------------------------------------

  /** One page of the native transcript (the source of truth), oldest first. */
  async transcript(view: SessionView, first: number, after: string | null): Promise<{ entries: { cursor: string; entry: TranscriptEntry }[]; hasNextPage: boolean }> {
    const start = after ? decodeTranscriptCursor(after) + 1 : 0;
    const all = await this.drivers[view.harnessId].transcript(view.nativeId);
    const page = all.slice(start, start + first);
    return { entries: page.map((entry, i) => ({ cursor: transcriptCursor(start + i), entry })), hasNextPage: start + first < all.length };
  }

  /** Transcript entries by id (memory capture's fetch-by-id). */
  async transcriptEntries(raw: string, ids: readonly string[]): Promise<TranscriptEntry[]> {
    const view = await this.resolve(raw);
    if (!view) return [];
    const wanted = new Set(ids);
    return (await this.drivers[view.harnessId].transcript(view.nativeId)).filter((e) => wanted.has(e.id));
  }

  // ---- events ---------------------------------------------------------------------------------

  /**
   * Replays harness events after `after`, then follows: one session's lineage (following rotations),
   * one harness, or everything.
   */
  async tail(filter: { sessionId?: string | null; harnessId?: string | null }, after: string | null): Promise<HarnessEventTail> {
    const cursor = decodeCursorOrBad(after);
    const f: HarnessTailFilter = {};
    if (filter.harnessId) f.harnessId = requireHarnessId(filter.harnessId);
    if (filter.sessionId) {
      const ref = classifySessionRef(filter.sessionId);
      const view = await this.resolve(filter.sessionId);
      const id = view?.id ?? (ref.kind === 'canonical' ? ref.parsed.sessionId : null);
      if (!id) throw new MeshError('NOT_FOUND', `sessionId: no session ${JSON.stringify(filter.sessionId)}`);
      if (f.harnessId && !id.startsWith(`${f.harnessId}:`)) throw new MeshError('BAD_USER_INPUT', `sessionId ${id} is not a session of harness ${f.harnessId}`);
      f.harnessId = undefined;
      f.sessionIds = await this.store.lineage(id);
    }
    return followHarnessEvents(this.dataSource, this.notifier, cursor, f);
  }

  /** The harness stream's current end (subscriptions "from now"). */
  private async streamEnd(): Promise<number> {
    const [row] = (await this.dataSource.query('SELECT last_seq FROM event_streams WHERE stream = $1', [streams.harness])) as { last_seq: string }[];
    return row ? Number(row.last_seq) : 0;
  }

  /** Feeds `sink` every event of the filter from now on; returns the unsubscribe function. */
  subscribe(filter: { sessionId?: string; harnessId?: string }, sink: (e: HarnessEvent) => void): () => void {
    let tail: HarnessEventTail | undefined;
    let stopped = false;
    void (async () => {
      tail = await this.tail(filter, String(await this.streamEnd()));
      if (stopped) return void tail.return?.();
      for await (const env of tail) sink(toHarnessEvent(env));
    })().catch((err: unknown) => this.log.warn({ err }, 'a harness subscription ended'));
    return () => {
      stopped = true;
      void tail?.return?.();
    };
  }

  // ---- tasks ----------------------------------------------------------------------------------

  /**
   * Records a task to run `prompt` headless in the project (the caller starts its workflow). A
   * harness that pins ids gets its session now, so clients can follow it before the first event.
   */
  async createTask(input: { harnessId: string; prompt: string; projectId: string | null }): Promise<TaskRecord> {
    const harnessId = requireHarnessId(input.harnessId);
    const driver = this.drivers[harnessId];
    const executor = await driver.taskExecutor();
    if (!executor.implemented) throw new MeshError('CAPABILITY_UNSUPPORTED', `runTask is not supported for ${harnessId}: ${executor.reason}`, { harnessId, capability: 'taskExecutor' });
    if (!input.projectId) throw new MeshError('BAD_USER_INPUT', 'projectId: required — a task runs in its project\'s root');
    const place = await this.placeFor(input.projectId, null);
    const id = randomUUID();
    let sessionId: SessionId | null = null;
    if (driver.features.pinning !== 'none') {
      await driver.prepare();
      const nativeId = driver.newNativeId();
      await driver.pin(nativeId, place.cwd);
      sessionId = formatSessionId(harnessId, nativeId);
    }
    const task = await this.store.createTask({ id, harnessId, prompt: input.prompt, projectId: place.projectId, cwd: place.cwd, sessionId, workflowId: `harness-task-${id}` });
    if (sessionId) {
      await this.store.create({ id: sessionId, harnessId, nativeId: sessionId.slice(harnessId.length + 1), projectId: place.projectId, workspaceId: null, cwd: place.cwd, title: null, origin: 'task', taskId: id });
    }
    return task;
  }

  /**
   * The CLI turn of a task (the `harnessTask` workflow's activity): one attempt at a time per task
   * (a lease renewed with the heartbeat), the process group killed when `signal` aborts
   * (cancellation) and KEELSON_TASK_ID in the child's environment.
   * @throws TURN_IN_FLIGHT (retryable) while an earlier attempt still runs.
   */
  async runTaskTurn(taskId: string, ctl: TurnControl): Promise<TurnOutcome> {
    const holder = `task:${taskId}:${ctl.attempt}:${HOST}:${process.pid}`;
    const task = await this.store.acquireTaskLease(taskId, holder, this.settings.leaseMs);
    let turn: LocalTurn | undefined;
    const beat = setInterval(() => {
      ctl.heartbeat({ sessionId: turn?.sessionId ?? task.sessionId, pgid: turn?.proc.pgid ?? null });
      void this.store.renewTaskLease(taskId, holder, this.settings.leaseMs).catch(() => undefined);
    }, 1000);
    const onAbort = () => {
      if (turn) void this.interruptLocal(turn);
    };
    ctl.signal.addEventListener('abort', onAbort);
    try {
      if (task.status !== 'RUNNING') return { sessionId: task.sessionId, turnId: '', status: task.status === 'SUCCEEDED' ? 'COMPLETED' : task.status === 'CANCELLED' ? 'INTERRUPTED' : 'FAILED', result: task.result, error: task.error };
      const driver = this.drivers[task.harnessId];
      const opts: TurnOptions = { text: task.prompt, attachments: [], allowTools: [], holder, taskId };
      if (task.sessionId) {
        const record = await this.store.get(await this.store.resolveAlias(task.sessionId));
        if (!record) throw new MeshError('NOT_FOUND', `task ${taskId}: its session ${task.sessionId} is gone`);
        turn = await this.startTurn(record, await this.cwdOf(record), opts);
      } else {
        turn = await this.startNewSessionTurn(driver, task, opts);
      }
      if (ctl.signal.aborted) onAbort();
      return await turn.done;
    } finally {
      clearInterval(beat);
      ctl.signal.removeEventListener('abort', onAbort);
      await this.store.releaseTaskLease(taskId, holder).catch(() => undefined);
    }
  }

  /**
   * One steer of a session's `sessionSteer` queue, run as the session's next turn with the steer's
   * id as the turn id (the workflow's `sessionSteerTurn` activity). TURN_IN_FLIGHT (retried by
   * Temporal) while another turn holds the session. A steer is never started twice: when its turn
   * already left a trace (an earlier attempt, before a worker crash) the answer is how that turn
   * ended — LOST when it never completed.
   */
  async runSteerTurn(input: { sessionId: string; steerId: string; text: string }, ctl: TurnControl): Promise<TurnOutcome> {
    const { view } = await this.sessionFor(input.sessionId, 'resume', 'steerSession');
    const record = view.record ?? (await this.adopt(view, true));
    const earlier = await this.earlierSteerTurn(record, input.steerId);
    if (earlier) return earlier;
    let turn: LocalTurn | undefined;
    const beat = setInterval(() => ctl.heartbeat({ sessionId: record.id, pgid: turn?.proc.pgid ?? null }), 1000);
    const onAbort = () => {
      if (turn) void this.interruptLocal(turn);
    };
    ctl.signal.addEventListener('abort', onAbort);
    try {
      const holder = `steer:${input.steerId}:${ctl.attempt}:${HOST}:${process.pid}`;
      turn = await this.startTurn(record, await this.cwdOf(record), { text: input.text, attachments: [], allowTools: [], holder, taskId: record.taskId, turnId: input.steerId });
      if (ctl.signal.aborted) onAbort();
      return await turn.done;
    } finally {
      clearInterval(beat);
      ctl.signal.removeEventListener('abort', onAbort);
    }
  }

  /** How the turn `turnId` of the session went, when it was started before; null when it never was. */
  private async earlierSteerTurn(record: SessionRecord, turnId: string): Promise<TurnOutcome | null> {
    const outcome = (status: TurnStatus, error: string | null, result: string | null = null): TurnOutcome => ({ sessionId: record.id, turnId, status, result, error });
    if (record.turnId === turnId) {
      if (record.turnExpiresAt && record.turnExpiresAt.getTime() >= Date.now()) {
        throw new MeshError('TURN_IN_FLIGHT', `session ${record.id}: the steer's turn ${turnId} is still running (held by ${record.turnHolder})`, { turnId, holder: record.turnHolder });
      }
      const error = 'the process running this steer stopped renewing its lease; the steer is not run again';
      await this.store.completeTurn(record.id, turnId, { status: 'LOST', error });
      return outcome('LOST', error);
    }
    const trace = await this.store.turnTrace(record.id, turnId);
    if (trace.completed) return outcome(trace.completed.status, trace.completed.error ?? null, trace.completed.result ?? null);
    return trace.started ? outcome('LOST', 'the steer\'s turn started before and never completed; it is not run again') : null;
  }

  /**
   * Interrupts the turn a task runs (the workflow's cancellation, without waiting for a heartbeat
   * to carry it): killed here when this process runs it, else flagged for its holder.
   */
  async interruptTask(taskId: string): Promise<boolean> {
    const task = await this.store.task(taskId);
    if (!task?.sessionId) return false;
    const sessionId = await this.store.resolveAlias(task.sessionId);
    const local = [...this.local.values()].find((t) => t.sessionId === sessionId);
    if (local) {
      await this.interruptLocal(local);
      return true;
    }
    return (await this.store.requestInterrupt(sessionId)) !== null;
  }

  /** The task's final status from its turn (first settle wins). */
  settleTask(taskId: string, outcome: { status: TurnStatus | RunStatus; result?: string | null; error?: string | null }): Promise<TaskRecord | null> {
    const status = outcome.status in taskStatusOf ? taskStatusOf[outcome.status as TurnStatus] : (outcome.status as RunStatus);
    return this.store.settleTask(taskId, status, { result: outcome.result ? clipText(outcome.result).text : null, error: outcome.error ? clipText(outcome.error, 1000).text : null });
  }

  // ---- the seed's per-harness driver view -----------------------------------------------------

  /** The seed's `HarnessDriver` for one harness, backed by this control plane. */
  driverView(harnessId: HarnessId): HarnessDriver {
    const summary = async (id: string): Promise<SessionSummary> => {
      const v = await this.requireSession(id);
      return summaryOf(v);
    };
    const own = (id: string) => {
      if (!id.startsWith(`${harnessId}:`)) throw new MeshError('BAD_USER_INPUT', `sessionId: ${id} is not a ${harnessId} session`);
      return id;
    };
    return {
      harnessId,
      capabilities: async () => (await this.capabilities(harnessId)).flags,
      startSession: async (opts) => summary((await this.startSession(harnessId, { projectId: opts.projectId, workspaceId: opts.workspaceId, title: opts.title })).id),
      resumeSession: async (id) => summary((await this.resumeSession(own(id))).id),
      interrupt: async (id) => void (await this.interruptSession(own(id))),
      sendUserTurn: async (id, turn) => void (await this.sendUserTurn(own(id), turn.text, turn.attachments ?? [])),
      resolveApproval: async (id, requestId, decision) => void (await this.resolveApproval(own(id), requestId, decision)),
      subscribe: (id, sink) => this.subscribe({ sessionId: own(id) }, sink),
      subscribeEvents: (sink) => this.subscribe({ harnessId }, sink),
      listSessions: async () => (await this.listSessions({ harnessId })).map(summaryOf),
      getSession: async (id) => {
        const v = await this.resolve(own(id));
        return v ? summaryOf(v) : null;
      },
    };
  }

  /** Kills every turn this process runs (shutdown). */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await Promise.all([...this.local.values()].map(async (t) => {
      await this.interruptLocal(t);
      await t.done.catch(() => undefined);
    }));
  }

  /** Turns running in this process (operators and tests). */
  localTurns(): { turnId: string; sessionId: string | null; pgid: number }[] {
    return [...this.local.values()].map((t) => ({ turnId: t.turnId, sessionId: t.sessionId, pgid: t.proc.pgid }));
  }
}

function decodeCursorOrBad(after: string | null): number {
  try {
    return decodeCursor(after);
  } catch {
    throw new MeshError('BAD_USER_INPUT', 'after: expected a cursor previously received from this stream');
  }
}

export function summaryOf(v: SessionView): SessionSummary {
  return {
    sessionId: v.id,
    harnessId: v.harnessId,
    nativeId: v.nativeId,
    cwd: v.record?.cwd ?? v.native?.cwd ?? null,
    title: v.record?.title ?? v.native?.title ?? null,
    createdAt: v.record?.createdAt ?? v.native?.createdAt ?? null,
    updatedAt: v.record?.updatedAt ?? v.native?.updatedAt ?? null,
  };
}

/** An event-log envelope of the `harness` stream as a HarnessEvent. */
export function toHarnessEvent(env: { cursor: string; key: string; type: string; payload: Record<string, unknown>; at: Date }): HarnessEvent {
  const { sessionId: _s, harnessId, seq, turnId, taskId, ...payload } = env.payload as Record<string, unknown>;
  return {
    cursor: env.cursor,
    type: env.type as HarnessEvent['type'],
    sessionId: env.key as SessionId,
    harnessId: (harnessId as HarnessId) ?? (env.key.slice(0, env.key.indexOf(':')) as HarnessId),
    seq: Number(seq ?? 0),
    turnId: (turnId as string | null) ?? null,
    taskId: (taskId as string | null) ?? null,
    at: env.at,
    payload: payload as never,
  };
}

