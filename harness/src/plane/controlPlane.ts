import { stat } from 'node:fs/promises';
import type { EventNotifier } from '@keelson/platform';
import { MeshError, type ApprovalDecision, type RunStatus, type TurnStatus } from '@keelson/schema';
import type { Logger } from '@keelson/service';
import type { DataSource } from 'typeorm';
import { confinedPath } from '../confine';
import type { CapabilityReport, HarnessDriver, HarnessEvent, TaskExecutorInfo, TranscriptEntry } from '../contract';
import type { CliDriver } from '../drivers/cliDriver';
import { requireHarnessId, type HarnessId } from '../ids';
import type { DriverRegistry } from '../registry';
import type { HarnessSettings } from '../settings';
import { Approvals } from './approvals';
import { HarnessEvents } from './events';
import { Places } from './places';
import { Prompts } from './prompts';
import type { HarnessProjectsApi } from './projects';
import { Sessions, summaryOf, viewOf, type SessionView } from './sessions';
import { Steering } from './steering';
import { HOST, type HarnessStore, type SessionRecord, type TaskRecord } from './store';
import type { HarnessEventTail } from './tail';
import { Tasks } from './tasks';
import { Uploads } from './uploads';
import { PermissionGate } from './permissions';
import { Turns, type TurnAccepted, type TurnControl, type TurnOutcome } from './turn';

export interface ControlPlaneOptions {
  store: HarnessStore;
  drivers: DriverRegistry;
  projects: HarnessProjectsApi;
  settings: HarnessSettings;
  dataSource: DataSource;
  notifier: EventNotifier;
  log: Logger;
}

/**
 * The harness control plane, composed of the seed's nouns: {@link Sessions} (identity, listing,
 * adoption, transcripts), {@link Turns} (a {@link Turn} per running CLI: lease, spawn, follow, renew,
 * timeout, settle), {@link Tasks}, {@link Approvals}, {@link Steering} and the {@link HarnessEvents}
 * read back from the event log. Each operation on a session resolves it once, here at the edge,
 * and hands the parts the resolved session. One per process (the sessions subgraph and the worker
 * each have one); everything shared lives in Postgres.
 */
export class HarnessControlPlane {
  readonly drivers: DriverRegistry;
  readonly store: HarnessStore;
  readonly sessions: Sessions;
  readonly turns: Turns;
  readonly tasks: Tasks;
  readonly approvals: Approvals;
  readonly prompts: Prompts;
  readonly steering: Steering;
  readonly events: HarnessEvents;
  /** Files staged by `POST /api/uploads`, attached to turns by id. */
  readonly uploads: Uploads;
  /** Approvals asked before a tool runs (the permission endpoint's side). */
  readonly permissions: PermissionGate;
  private readonly places: Places;

  constructor(opts: ControlPlaneOptions) {
    const { store, drivers, settings, log } = opts;
    this.drivers = drivers;
    this.store = store;
    const places = (this.places = new Places(opts.projects));
    this.sessions = new Sessions({ store, drivers, places, log });
    this.events = new HarnessEvents({ store, sessions: this.sessions, dataSource: opts.dataSource, notifier: opts.notifier, log });
    this.permissions = new PermissionGate({ store, events: this.events, log });
    this.turns = new Turns({ store, drivers, settings, log, permissions: this.permissions });
    this.tasks = new Tasks({ store, drivers, settings, places, turns: this.turns });
    this.approvals = new Approvals({ store, places, turns: this.turns });
    this.prompts = new Prompts({ store, places, turns: this.turns });
    this.steering = new Steering({ store, places, turns: this.turns });
    this.uploads = new Uploads(settings.uploads);
  }

  /**
   * Serves the permission endpoint at `url` (the sessions service, once it listens): turns of CLIs
   * with a permission hook ask there before a tool runs (`approvalsBeforeTool`).
   */
  servePermissions(url: string): void {
    this.permissions.url = url;
    for (const driver of Object.values(this.drivers)) driver.permissionHooks = true;
  }

  driver(harnessId: string): CliDriver {
    return this.drivers[requireHarnessId(harnessId)];
  }

  capabilities(harnessId: HarnessId): Promise<CapabilityReport> {
    return this.sessions.capabilities(harnessId);
  }

  taskExecutor(harnessId: HarnessId): Promise<TaskExecutorInfo> {
    return this.drivers[harnessId].taskExecutor();
  }

  // ---- sessions -------------------------------------------------------------------------------

  /** {@link Sessions.resolve}. */
  resolve(raw: string, field = 'sessionId'): Promise<SessionView | null> {
    return this.sessions.resolve(raw, field);
  }

  /** {@link Sessions.requireSession}. */
  requireSession(raw: string, field = 'sessionId'): Promise<SessionView> {
    return this.sessions.requireSession(raw, field);
  }

  /** {@link Sessions.list}. */
  listSessions(filter: { harnessId?: HarnessId | null; projectId?: string | null }): Promise<SessionView[]> {
    return this.sessions.list(filter);
  }

  /** {@link Sessions.start}. */
  startSession(harnessIdRaw: string, input: { projectId: string; workspaceId?: string | null; title?: string | null; model?: string | null; effort?: string | null }): Promise<SessionRecord> {
    return this.sessions.start(harnessIdRaw, input);
  }

  /** Makes a session the mesh's: one it knows, or one found in its harness's native store (adopted). */
  async resumeSession(raw: string): Promise<SessionRecord> {
    const { view } = await this.sessions.at(raw, 'resume', 'resumeSession');
    return this.sessions.own(view);
  }

  /** {@link Sessions.transcript}. */
  transcript(view: SessionView, first: number, after: string | null): Promise<{ entries: { cursor: string; entry: TranscriptEntry }[]; hasNextPage: boolean }> {
    return this.sessions.transcript(view, first, after);
  }

  /** {@link Sessions.transcriptEntries}. */
  transcriptEntries(raw: string, ids: readonly string[]): Promise<TranscriptEntry[]> {
    return this.sessions.transcriptEntries(raw, ids);
  }

  // ---- turns ----------------------------------------------------------------------------------

  /**
   * Runs one headless turn resuming the session's native session; resolves once the CLI is running
   * (its events follow on the `harness` stream, ending with TurnComplete).
   * @throws TURN_IN_FLIGHT while another turn holds the session (in any process),
   *   CAPABILITY_UNSUPPORTED (attachments, a harness without a driver), FORBIDDEN (confinement).
   */
  async sendUserTurn(
    raw: string,
    text: string,
    attachments: string[] = [],
    choice: { model?: string | null; effort?: string | null } = {},
    /** Whose uploads an attachment id may name ({@link uploadOwner}); without it only paths are taken. */
    uploader?: string,
  ): Promise<TurnAccepted> {
    const { view, report } = await this.sessions.at(raw, 'resume', 'sendUserTurn');
    // A model or effort the CLI cannot take is refused before anything is recorded or started.
    this.drivers[view.harnessId].checkChoice(choice);
    if (attachments.length && !report.flags.attachments) {
      throw new MeshError('CAPABILITY_UNSUPPORTED', `attachments are not supported for ${view.harnessId}: ${report.reasons.attachments}`, { harnessId: view.harnessId, capability: 'attachments' });
    }
    const record = await this.sessions.ownForTurn(view);
    const cwd = await this.places.cwdOf(record);
    const files: string[] = [];
    for (const a of attachments) files.push(await this.attachment(a, cwd, uploader));
    const turn = await this.turns.start(record, cwd, { text, attachments: files, allowTools: [], holder: `turn:${HOST}:${process.pid}`, taskId: record.taskId, model: choice.model ?? null, effort: choice.effort ?? null });
    turn.done.catch(() => undefined);
    return { sessionId: record.id, turnId: turn.turnId, acceptedAt: new Date() };
  }

  /** An attachment's file: an upload of `uploader`'s when `a` is an upload id, else a file inside `cwd`. */
  private async attachment(a: string, cwd: string, uploader: string | undefined): Promise<string> {
    if (Uploads.isId(a)) {
      if (!uploader) throw new MeshError('BAD_USER_INPUT', `attachments: ${JSON.stringify(a)} is an upload id, and uploads are attached only by the caller who made them`);
      return (await this.uploads.open(a, uploader)).path;
    }
    const real = await confinedPath(cwd, a, 'attachment');
    const st = await stat(real).catch(() => null);
    if (!st?.isFile()) throw new MeshError('BAD_USER_INPUT', `attachments: ${JSON.stringify(a)} is not a file in ${cwd} nor an upload id`);
    return real;
  }

  /** {@link Turns.interruptSession} of the session `raw` names; false when the mesh has no record of it. */
  async interruptSession(raw: string): Promise<boolean> {
    const { view } = await this.sessions.at(raw, 'interrupt', 'interruptSession');
    return view.record ? this.turns.interruptSession(view.record) : false;
  }

  /** {@link Approvals.resolve} on the session `raw` names. */
  async resolveApproval(raw: string, requestId: string, decision: ApprovalDecision): Promise<boolean> {
    const { view } = await this.sessions.at(raw, 'approvals', 'resolveApproval');
    return this.approvals.resolve(view, requestId, decision);
  }

  /** {@link Prompts.answer} on the session `raw` names: the answer runs as its next turn. */
  async answerPrompt(raw: string, promptId: string, text: string): Promise<{ turnId: string }> {
    const { view } = await this.sessions.at(raw, 'resume', 'answerPrompt');
    return this.prompts.answer(view, promptId, text);
  }

  /** {@link Steering.runTurn} on the session the steer names (adopted for the turn when native). */
  async runSteerTurn(input: { sessionId: string; steerId: string; text: string }, ctl: TurnControl): Promise<TurnOutcome> {
    const { view } = await this.sessions.at(input.sessionId, 'resume', 'steerSession');
    return this.steering.runTurn(await this.sessions.ownForTurn(view), input, ctl);
  }

  // ---- events ---------------------------------------------------------------------------------

  /** {@link HarnessEvents.tail}. */
  tail(filter: { sessionId?: string | null; harnessId?: string | null }, after: string | null): Promise<HarnessEventTail> {
    return this.events.tail(filter, after);
  }

  /** {@link HarnessEvents.subscribe}. */
  subscribe(filter: { sessionId?: string; harnessId?: string }, sink: (e: HarnessEvent) => void): () => void {
    return this.events.subscribe(filter, sink);
  }

  // ---- tasks ----------------------------------------------------------------------------------

  /** {@link Tasks.create}. */
  createTask(input: { harnessId: string; prompt: string; projectId: string | null }): Promise<TaskRecord> {
    return this.tasks.create(input);
  }

  /** {@link Tasks.runTurn}. */
  runTaskTurn(taskId: string, ctl: TurnControl): Promise<TurnOutcome> {
    return this.tasks.runTurn(taskId, ctl);
  }

  /** {@link Tasks.interrupt}. */
  interruptTask(taskId: string): Promise<boolean> {
    return this.tasks.interrupt(taskId);
  }

  /** {@link Tasks.settle}. */
  settleTask(taskId: string, outcome: { status: TurnStatus | RunStatus; result?: string | null; error?: string | null }): Promise<TaskRecord | null> {
    return this.tasks.settle(taskId, outcome);
  }

  // ---- the seed's per-harness driver view -----------------------------------------------------

  /** The seed's `HarnessDriver` for one harness, backed by this control plane. */
  driverView(harnessId: HarnessId): HarnessDriver {
    const own = (id: string) => {
      if (!id.startsWith(`${harnessId}:`)) throw new MeshError('BAD_USER_INPUT', `sessionId: ${id} is not a ${harnessId} session`);
      return id;
    };
    return {
      harnessId,
      capabilities: async () => (await this.capabilities(harnessId)).flags,
      startSession: async (opts) => summaryOf(viewOf(await this.startSession(harnessId, { projectId: opts.projectId, workspaceId: opts.workspaceId, title: opts.title }))),
      resumeSession: async (id) => summaryOf(viewOf(await this.resumeSession(own(id)))),
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
  stop(): Promise<void> {
    return this.turns.stop();
  }

  /** Turns running in this process (operators and tests). */
  localTurns(): { turnId: string; sessionId: string | null; pgid: number }[] {
    return this.turns.list();
  }
}
