import { type EventLog } from '@keelson/platform';
import { createHash, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { parseInput } from '@keelson/schema';
import {
  actorOf,
  describeZodError,
  isTerminalRunStatus,
  isUuid,
  MeshError,
  runLimits,
  utf8Bytes,
  type Caller,
  type RunStatus,
  workflowDefinitionSchema,
  type WorkflowDefinition,
} from '@keelson/schema';
import type { RunsPort } from '@keelson/host';
import { currentCaller, type Logger } from '@keelson/service';
import { In, IsNull, type DataSource } from 'typeorm';
import { z } from 'zod';
import { pageOf, type PageArgs } from '@keelson/schema';
import type { CatalogService } from '../catalog/catalog';
import type { RunsExecutor } from '../executor';
import { steerKeySchema, steerNoteSchema } from '../steerInput';
import type { ProjectRef, ProjectsApi } from '../projects';
import type { RunsSettings } from '../settings';
import type { RunStore } from '../store/runStore';
import { Run, runFromRow, type RunRow } from './run.entity';
import { runNodeFromRow, type RunNode, type RunNodeRow } from './runNode.entity';
import { RunPause } from './runPause.entity';

/** The outcome of a gate answer: ok, or the reason it was rejected. */
export interface RespondOutcome {
  ok: boolean;
  error: string | null;
  /** The pause the answer resolved. */
  pauseId: string | null;
  decision: 'approved' | 'feedback' | null;
  /** True when this exact answer had already been recorded (idempotent repeat). */
  duplicate: boolean;
}

/** The outcome of a cancel: ok once requested, or why not. */
export interface CancelOutcome {
  ok: boolean;
  error: string | null;
}

/** A page of runs, newest first. */
export type RunPage = ReturnType<typeof pageOf<Run>>;

export interface RunsDeps {
  dataSource: DataSource;
  store: RunStore;
  events: EventLog;
  catalog: CatalogService;
  projects: ProjectsApi;
  executor: RunsExecutor;
  settings: RunsSettings;
  log: Logger;
}

const startSchema = z.object({
  name: z.string({ error: 'expected a workflow name' }).trim().min(1, 'must not be empty').max(200),
  inputs: z
    .record(z.string(), z.string({ error: 'input values are strings' }), { error: 'expected an object of string values' })
    .nullish(),
  projectId: z.string().trim().min(1, 'must not be empty').nullish(),
  startedByRibId: z.string().min(1).max(64).nullish(),
});
export type StartWorkflowArgs = z.input<typeof startSchema>;

const respondSchema = z.object({
  runId: z.string(),
  nodeId: z.string().min(1, 'must not be empty').max(64),
  text: z.string(),
  pauseId: z.string().min(1, 'must not be empty').max(200).nullish(),
});

/** Runs: starting (the catalog, inputs, project scope), answering gates, cancelling, resuming, reading. */
export class RunService {
  constructor(private readonly deps: RunsDeps) {}

  private get repo() {
    return this.deps.dataSource.getRepository(Run);
  }

  byIds(ids: readonly string[]): Promise<Run[]> {
    const valid = ids.filter(isUuid);
    return valid.length ? this.repo.findBy({ id: In(valid) }) : Promise.resolve([]);
  }

  /** The run or NOT_FOUND. */
  async require(id: string): Promise<Run> {
    const run = isUuid(id) ? await this.repo.findOneBy({ id }) : null;
    if (!run) throw new MeshError('NOT_FOUND', `run ${JSON.stringify(id)} does not exist`);
    return run;
  }

  /** Nodes of the given runs, in definition order. */
  async nodesOf(runIds: readonly string[]): Promise<RunNode[]> {
    const ids = runIds.filter(isUuid);
    if (!ids.length) return [];
    const rows = (await this.deps.dataSource.query(
      `SELECT run_id, node_id, position, type, depends_on, status, attempt, output, prompt, output_bytes, output_truncated, exit_code, error, started_at, completed_at
       FROM run_nodes WHERE run_id = ANY($1::uuid[]) ORDER BY position`,
      [ids],
    )) as RunNodeRow[];
    return rows.map(runNodeFromRow);
  }

  /** Open pauses of the given runs, oldest first. */
  openPausesOf(runIds: readonly string[]): Promise<RunPause[]> {
    return this.deps.dataSource.getRepository(RunPause).find({ where: { runId: In([...runIds]), closedAt: IsNull() }, order: { openedAt: 'ASC' } });
  }

  temporalUiUrl(workflowId: string): string | null {
    return this.deps.executor.uiUrl(workflowId);
  }

  /** Runs newest first, filtered by status and workflow name. */
  async page(filter: { status?: RunStatus | null; workflowName?: string | null }, args: PageArgs): Promise<RunPage> {
    const qb = this.repo.createQueryBuilder('r').orderBy('r.seq', 'DESC').take(args.first + 1);
    if (filter.status) qb.andWhere('r.status = :status', { status: filter.status });
    if (filter.workflowName) qb.andWhere('r.workflow_name = :name', { name: filter.workflowName });
    if (args.after !== null) qb.andWhere('r.seq < :after', { after: args.after });
    return pageOf(await qb.getMany(), args.first, (r) => r.seq);
  }

  /**
   * Pages of runs per owner, batched: one statement per distinct (status, first, after), which
   * returns the runs themselves (no second lookup by id), mapped by hand. An owner is a project
   * (`project:<id>`) or a rib (`rib:<id>`: runs of its workflows and runs it started).
   */
  async pagesFor(requests: readonly { owner: string; status: RunStatus | null; args: PageArgs }[]): Promise<RunPage[]> {
    const groups = new Map<string, number[]>();
    requests.forEach((r, i) => {
      const key = `${r.owner.split(':')[0]}\u0000${r.status ?? ''}\u0000${r.args.first}\u0000${r.args.after ?? ''}`;
      const group = groups.get(key);
      if (group) group.push(i);
      else groups.set(key, [i]);
    });
    const out: RunPage[] = new Array(requests.length);
    for (const indexes of groups.values()) {
      const { status, args, owner } = requests[indexes[0]!]!;
      const kind = owner.split(':')[0];
      const owners = indexes.map((i) => requests[i]!.owner.slice(kind!.length + 1));
      // A project id that is not a UUID names no project: its page is empty.
      const queried = kind === 'project' ? owners.filter(isUuid) : owners;
      const match = kind === 'project' ? 'r.project_id = k.owner::uuid' : '(r.rib_id = k.owner OR r.started_by_rib_id = k.owner)';
      const rows = (await this.deps.dataSource.query(
        `SELECT k.owner AS page_owner, x.* FROM unnest($1::text[]) AS k(owner)
         CROSS JOIN LATERAL (
           SELECT r.* FROM runs r
           WHERE ${match} AND ($2::text IS NULL OR r.status = $2) AND ($3::bigint IS NULL OR r.seq < $3)
           ORDER BY r.seq DESC LIMIT $4
         ) x ORDER BY k.owner, x.seq DESC`,
        [queried, status, args.after, args.first + 1],
      )) as (RunRow & { page_owner: string })[];
      const byOwner = new Map<string, Run[]>();
      for (const row of rows) {
        const list = byOwner.get(row.page_owner);
        if (list) list.push(runFromRow(row));
        else byOwner.set(row.page_owner, [runFromRow(row)]);
      }
      indexes.forEach((i, j) => {
        out[i] = pageOf(byOwner.get(owners[j]!) ?? [], args.first, (r) => r.seq);
      });
    }
    return out;
  }

  /**
   * Starts a catalog workflow: resolved in the project's scope (a project workflow shadows nothing; a
   * colliding one is `project:<name>`), refused FORBIDDEN when it is the project's own and the project
   * is not trusted — here, where every start (GraphQL, rib seams) passes — inputs checked against its
   * declaration, the run registered, then its first launch started on Temporal. Resolves once the run
   * is registered and its workflow started.
   */
  async start(raw: StartWorkflowArgs): Promise<Run> {
    const args = parseInput(startSchema, raw);
    let project: ProjectRef | null = null;
    if (args.projectId) {
      project = isUuid(args.projectId) ? await this.deps.projects.project(args.projectId) : null;
      if (!project) throw new MeshError('NOT_FOUND', `project ${JSON.stringify(args.projectId)} does not exist`);
    }
    const catalog = await this.deps.catalog.load(project);
    const entry = catalog.entries.find((e) => e.name === args.name);
    if (!entry) {
      const known = catalog.entries.map((e) => e.name).join(', ') || 'none';
      throw new MeshError('NOT_FOUND', `workflow ${JSON.stringify(args.name)} does not exist${project ? ` in project ${project.name}'s scope` : ''} (known: ${known})`);
    }
    if (entry.scope === 'PROJECT') assertTrusted(project, entry.name, { loaded: catalog.projectDigest ?? null });
    const def = entry.definition;
    // A qualified project workflow runs (and is listed in runs and in Temporal) under its catalog name.
    const workflowName = entry.name;
    if ((def.requiresProject || def.worktree.enabled) && !project) {
      throw new MeshError('BAD_USER_INPUT', `projectId: workflow ${def.name} ${def.worktree.enabled ? 'runs in a worktree of a project' : 'requires a project'}; pass projectId`);
    }
    const inputs = resolveInputs(def, args.inputs ?? {});
    const runId = randomUUID();
    const workflowId = this.deps.executor.runWorkflowId(workflowName, runId);
    const home = this.deps.settings.keelsonHome;
    const title = [workflowName, project ? `in ${project.name}` : null, def.description ? `— ${def.description.split('\n')[0]!.slice(0, 80)}` : null]
      .filter(Boolean)
      .join(' ');
    const registered = {
      id: runId,
      workflowName,
      title,
      definition: def,
      scope: entry.scope,
      inputs,
      projectId: project?.id ?? null,
      projectName: project?.name ?? null,
      ribId: entry.ribId ?? null,
      startedByRibId: args.startedByRibId ?? null,
      // Who started it: its agent turns act as this caller, never with more (see RunStartedBy).
      startedBy: startingCaller(),
      // Without a project a run works in a scratch folder of its own, never in the Keelson home
      // itself (its config, home workflows and keys must not be an agent's to write).
      cwd: project?.rootPath ?? join(home, 'runs', runId, 'work'),
      artifactsDir: join(home, 'runs', runId, 'artifacts'),
      temporalWorkflowId: workflowId,
    };
    await this.deps.store.createRun(registered);
    // Launched from what was just registered (no read back first); answered with the run as it is now.
    await this.launch(registered, 1);
    return this.require(runId);
  }

  /**
   * Starts an in-memory definition (a rib's `runWorkflow`, a policy approval): validated here, inputs
   * checked against its declaration, registered with `scope` and its rib, run at `cwd` (default a
   * scratch folder of the run's own under the Keelson home). No worktree: a definition with `worktree.enabled` is refused (BAD_USER_INPUT).
   */
  async startDefinition(raw: Parameters<RunsPort['startDefinition']>[0]): Promise<Run> {
    const parsed = workflowDefinitionSchema.safeParse(raw.definition);
    if (!parsed.success) throw new MeshError('BAD_USER_INPUT', describeZodError(parsed.error, 'definition'));
    const def = parsed.data;
    if (def.worktree.enabled) throw new MeshError('BAD_USER_INPUT', `definition.worktree: an in-memory definition runs in place; ${def.name} asks for a worktree`);
    const inputs = resolveInputs(def, raw.inputs ?? {});
    const runId = randomUUID();
    const home = this.deps.settings.keelsonHome;
    await this.deps.store.createRun({
      id: runId,
      workflowName: def.name,
      title: raw.title ?? `${def.name} (in-memory${raw.startedByRibId ? `, by rib ${raw.startedByRibId}` : ''})`,
      definition: def,
      scope: raw.scope,
      inputs,
      projectId: null,
      projectName: null,
      ribId: raw.ribId,
      startedByRibId: raw.startedByRibId,
      cwd: raw.cwd ?? join(home, 'runs', runId, 'work'),
      artifactsDir: join(home, 'runs', runId, 'artifacts'),
      temporalWorkflowId: this.deps.executor.runWorkflowId(def.name, runId),
    });
    await this.launch(await this.require(runId), 1);
    return this.require(runId);
  }

  /** Starts launch `launch` of a registered run on the executor; a start that fails marks the run FAILED. */
  private async launch(run: Pick<Run, 'id' | 'temporalWorkflowId' | 'workflowName' | 'title' | 'projectName' | 'ribId' | 'startedByRibId'> & { startedBy?: Caller | null }, launch: number): Promise<void> {
    const { settings } = this.deps;
    const started = await this.deps.executor.startRun({
      workflowId: run.temporalWorkflowId,
      runId: run.id,
      launch,
      workflowName: run.workflowName,
      title: run.title,
      project: run.projectName,
      rib: run.startedByRibId ?? run.ribId,
      startedBy: run.startedBy?.subject ?? (run.startedByRibId ? `rib:${run.startedByRibId}` : null),
      heartbeatTimeoutMs: settings.heartbeatTimeoutMs,
      ...(settings.maxHistoryEvents ? { maxHistoryEvents: settings.maxHistoryEvents } : {}),
    });
    if (started.ok) {
      // RUN_STARTED now rather than at the first activity; if this write fails, that activity writes it.
      await this.deps.store
        .openLaunch(run.id, launch, started.executionId)
        .catch((err: unknown) => this.deps.log.warn({ err, runId: run.id }, 'RUN_STARTED left to the first activity'));
      return;
    }
    const message = started.alreadyRunning ? `workflow ${run.temporalWorkflowId} is still running` : started.message;
    await this.deps.store.failToStart(run.id, launch, message);
    throw new MeshError(started.alreadyRunning ? 'CONFLICT' : 'SERVICE_UNAVAILABLE', `run ${run.id} could not start: ${message}`);
  }

  /**
   * Answers an approval gate through the run's `respond` Update (validated by the workflow). Never
   * throws for a gate problem: a stale pause, a closed gate, a second different answer or text over
   * 16 KiB resolve to `{ ok: false, error }`; repeating the recorded answer is `{ ok: true, duplicate: true }`.
   */
  async respond(raw: { runId: string; nodeId: string; text: string; pauseId?: string | null }): Promise<RespondOutcome> {
    const args = parseInput(respondSchema, raw);
    // Who answers: the request's caller (a rib answering through its grant answers as the ribs service).
    const answerer = currentCaller();
    const rejected = (error: string): RespondOutcome => ({ ok: false, error, pauseId: args.pauseId ?? null, decision: null, duplicate: false });
    const bytes = utf8Bytes(args.text);
    if (bytes > runLimits.answerBytes) return rejected(`text: must be at most ${runLimits.answerBytes} bytes, got ${bytes}`);
    if (args.text.trim() === '') return rejected('text: must not be empty (answer "approve" or give feedback)');
    const run = await this.require(args.runId);
    if (args.pauseId) {
      // Pauses that already closed answer from the record: the workflow may be gone or continued.
      const pause = await this.deps.dataSource.getRepository(RunPause).findOneBy({ pauseId: args.pauseId, runId: run.id });
      if (pause && pause.nodeId !== args.nodeId) return rejected(`pause ${args.pauseId} belongs to gate "${pause.nodeId}", not "${args.nodeId}"`);
      if (pause?.decision != null) {
        return pause.decision === args.text
          ? { ok: true, error: null, pauseId: pause.pauseId, decision: decisionOf(pause.decision), duplicate: true }
          : rejected(`pause ${args.pauseId} of gate "${pause.nodeId}" was already answered; one decision is recorded per pause`);
      }
      if (pause?.closedAt) return rejected(`pause ${args.pauseId} of gate "${pause.nodeId}" is closed: the run ${pause.closedBy}`);
    }
    if (isTerminalRunStatus(run.status)) return rejected(`run ${run.id} is ${run.status}; its gates are closed`);
    const updateId = args.pauseId ? `respond-${args.pauseId}-${createHash('sha256').update(`${args.nodeId}\u0000${args.text}`).digest('hex').slice(0, 16)}` : undefined;
    const timeoutMs = this.deps.settings.respondTimeoutMs ?? 30_000;
    const sent = await this.deps.executor.answerGate(
      run.temporalWorkflowId,
      { nodeId: args.nodeId, text: args.text, ...(args.pauseId ? { pauseId: args.pauseId } : {}), ...(answerer ? { actor: actorOf(answerer) } : {}) },
      { timeoutMs, ...(updateId ? { updateId } : {}) },
    );
    switch (sent.outcome) {
      case 'answered':
        return { ok: true, error: null, pauseId: sent.result.pauseId, decision: sent.result.decision, duplicate: sent.result.duplicate };
      case 'rejected':
        return rejected(sent.reason);
      case 'not-running':
        return rejected(`run ${run.id} is not running; its gates are closed`);
      case 'timed-out':
        throw new MeshError('SERVICE_UNAVAILABLE', `run ${run.id}: no worker answered the gate within ${timeoutMs} ms; retry with the same pauseId`);
    }
  }

  /**
   * A steer note for a running prompt node (seed 002's `/steer`): its turn reads it after its current
   * tool round, before its next model call. ACCEPTED, or REJECTED with the reason (the run or node is
   * not running, the node is not a prompt node); NOT_FOUND for a node the run does not have. The same
   * `key` is one note however often sent.
   */
  async steerNode(runId: string, nodeId: string, rawNote: string, rawKey?: string | null): Promise<{ status: 'ACCEPTED' | 'REJECTED'; reason: string | null }> {
    const note = parseInput(steerNoteSchema, rawNote, 'note');
    const key = parseInput(steerKeySchema, rawKey, 'key') ?? null;
    const run = await this.require(runId);
    if (isTerminalRunStatus(run.status)) return { status: 'REJECTED', reason: `run ${run.id} is ${run.status}` };
    const sent = await this.deps.executor.steerNode(run.temporalWorkflowId, nodeId, note, key);
    switch (sent.outcome) {
      case 'accepted':
        return { status: 'ACCEPTED', reason: `read by node "${nodeId}" before its next model call` };
      case 'refused':
        return { status: 'REJECTED', reason: sent.reason };
      case 'not-running':
        return { status: 'REJECTED', reason: `run ${run.id} is not running` };
      case 'failed':
        if (sent.code === 'CONFLICT') return { status: 'REJECTED', reason: sent.message };
        throw new MeshError(sent.code, sent.message);
    }
  }

  /** Requests cancellation of a live run (running commands are killed through their heartbeats). */
  async cancel(runId: string): Promise<CancelOutcome> {
    const run = await this.require(runId);
    if (isTerminalRunStatus(run.status)) return { ok: false, error: `run ${run.id} already ${run.status}` };
    if (await this.deps.executor.cancel(run.temporalWorkflowId)) return { ok: true, error: null };
    return { ok: false, error: `run ${run.id} is not running` };
  }

  /**
   * Relaunches a FAILED or CANCELLED run from its first incomplete node: same run id, same Temporal
   * workflow id, launch + 1. Completed nodes never run again.
   */
  async resume(runId: string): Promise<Run> {
    const run = await this.require(runId);
    if (run.status !== 'FAILED' && run.status !== 'CANCELLED') {
      throw new MeshError('CONFLICT', `run ${run.id} is ${run.status}; only a FAILED or CANCELLED run can be resumed`);
    }
    // A project's own workflow runs again only while the project is (still) trusted.
    if (run.scope === 'PROJECT') {
      const project = run.projectId ? await this.deps.projects.project(run.projectId) : null;
      assertTrusted(project, run.workflowName);
    }
    // The previous execution records its outcome just before it closes: let it close.
    if (!(await this.deps.executor.closed(run.temporalWorkflowId, 15_000))) {
      throw new MeshError('CONFLICT', `run workflow ${run.temporalWorkflowId} is still closing; retry shortly`);
    }
    const prepared = await this.deps.store.prepareResume(run.id);
    await this.launch(await this.require(run.id), prepared.launch);
    return this.require(run.id);
  }
}

/**
 * FORBIDDEN unless `project` is trusted: a project's own workflow is its repository's code. At a
 * start, `loaded` is the digest of the files the definition came from (null when one could not be
 * read): they must be the very files trust was given for (a file changed after the project was
 * looked up never runs).
 */
function assertTrusted(project: ProjectRef | null, workflowName: string, start?: { loaded: string | null }): void {
  if (project?.trusted && (!start || (start.loaded !== null && start.loaded === project.trustedWorkflowsDigest))) return;
  throw new MeshError(
    'FORBIDDEN',
    project
      ? project.trusted
        ? `workflow ${JSON.stringify(workflowName)} comes from project ${project.name}'s own .keelson/workflows, which changed while the run was starting; ` +
          `its trust covers the files as they were (an admin can trust the new files with setProjectTrust(projectId: "${project.id}", trusted: true))`
        : `workflow ${JSON.stringify(workflowName)} comes from project ${project.name}'s own .keelson/workflows, and project ${project.name} is not trusted; ` +
          `an admin can trust it with setProjectTrust(projectId: "${project.id}", trusted: true)`
      : `workflow ${JSON.stringify(workflowName)} comes from a project's own .keelson/workflows, and that project no longer exists`,
    project ? { projectId: project.id } : undefined,
  );
}

function decisionOf(text: string): 'approved' | 'feedback' {
  const t = text.trim().toLowerCase();
  return t === 'approve' || t === 'approved' ? 'approved' : 'feedback';
}

/** Applies defaults and checks given inputs against the definition's declaration. */
export function resolveInputs(def: WorkflowDefinition, given: Record<string, string>): Record<string, string> {
  const declared = Object.keys(def.inputs);
  const problems: string[] = [];
  for (const [name, value] of Object.entries(given)) {
    if (declared.length && !declared.includes(name)) {
      problems.push(`inputs.${name}: workflow ${def.name} declares no input "${name}" (declared: ${declared.join(', ')})`);
    }
    const bytes = utf8Bytes(value);
    if (bytes > runLimits.inputBytes) problems.push(`inputs.${name}: must be at most ${runLimits.inputBytes} bytes, got ${bytes}`);
  }
  const resolved: Record<string, string> = {};
  for (const [name, spec] of Object.entries(def.inputs)) {
    const value = given[name] ?? spec.default;
    if (value === undefined) {
      if (spec.required) problems.push(`inputs.${name}: required by workflow ${def.name}${spec.description ? ` (${spec.description})` : ''}`);
    } else resolved[name] = value;
  }
  if (problems.length) throw new MeshError('BAD_USER_INPUT', problems.join('; '));
  return declared.length ? resolved : { ...given };
}

/** The caller of the request starting a run, as recorded on it (the assertion's fields only). */
function startingCaller(): Caller | null {
  const caller = currentCaller();
  if (!caller) return null;
  return { subject: caller.subject, kind: caller.kind, scopes: [...caller.scopes], ...(caller.tokenId ? { tokenId: caller.tokenId } : {}) };
}
