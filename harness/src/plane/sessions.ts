import { MeshError } from '@keelson/schema';
import type { Logger } from '@keelson/service';
import { realpathDeep } from '../confine';
import type { CapabilityReport, SessionSummary, TranscriptEntry } from '../contract';
import { classifySessionRef, formatSessionId, parseSessionId, requireHarnessId, type HarnessId, type SessionId, type SessionRef } from '../ids';
import type { DriverRegistry } from '../registry';
import type { Places } from './places';
import type { HarnessStore, SessionRecord } from './store';

/** A session as the mesh shows it: what it recorded, what the native store says, or both. */
export interface SessionView {
  id: SessionId;
  harnessId: HarnessId;
  nativeId: string;
  record: SessionRecord | null;
  native: SessionSummary | null;
}

export type Capability = keyof CapabilityReport['flags'];

export interface SessionsDeps {
  store: HarnessStore;
  drivers: DriverRegistry;
  places: Places;
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

/**
 * Sessions: identity (SessionIds, the bare-id probe, aliases), listing the mesh's records beside
 * the native stores, starting and adopting sessions, and their transcripts.
 */
export class Sessions {
  constructor(private readonly deps: SessionsDeps) {}

  capabilities(harnessId: HarnessId): Promise<CapabilityReport> {
    return this.deps.drivers[harnessId].report();
  }

  /** CAPABILITY_UNSUPPORTED with the capability's reason unless `harnessId` has it now. */
  async require(harnessId: HarnessId, capability: Capability, op: string): Promise<CapabilityReport> {
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
  resolve(raw: string, field = 'sessionId'): Promise<SessionView | null> {
    return this.resolveRef(classifySessionRef(raw, field), field);
  }

  /** {@link resolve} of an id already classified. */
  async resolveRef(ref: SessionRef, field = 'sessionId'): Promise<SessionView | null> {
    if (ref.kind === 'canonical') {
      const target = await this.deps.store.resolveAlias(ref.parsed.sessionId);
      const parsed = parseSessionId(target, field);
      return this.view(parsed.sessionId, parsed.harnessId, parsed.nativeId);
    }
    for (const harnessId of ref.probe) {
      const id = formatSessionId(harnessId, ref.nativeId);
      const target = await this.deps.store.resolveAlias(id);
      const parsed = parseSessionId(target, field);
      const found = await this.view(parsed.sessionId, parsed.harnessId, parsed.nativeId);
      if (found) return found;
    }
    return null;
  }

  /** {@link resolve}, NOT_FOUND when nothing holds the id. */
  async requireSession(raw: string, field = 'sessionId'): Promise<SessionView> {
    return found(raw, field, await this.resolve(raw, field));
  }

  /**
   * The edge of every operation on a session: `raw` classified and resolved once, its harness's
   * capability checked first — an operation the harness cannot do is CAPABILITY_UNSUPPORTED (501)
   * whether or not the session exists.
   */
  async at(raw: string, capability: Capability, op: string): Promise<{ view: SessionView; report: CapabilityReport }> {
    const ref = classifySessionRef(raw);
    const named = ref.kind === 'canonical' ? { harnessId: ref.parsed.harnessId, report: await this.require(ref.parsed.harnessId, capability, op) } : null;
    const view = found(raw, 'sessionId', await this.resolveRef(ref));
    // An alias leads to a session of the same harness; its capability was checked just above.
    const report = named?.harnessId === view.harnessId ? named.report : await this.require(view.harnessId, capability, op);
    return { view, report };
  }

  /** The mesh's record of a session, else what its native store holds (only looked up without a record). */
  private async view(id: SessionId, harnessId: HarnessId, nativeId: string): Promise<SessionView | null> {
    const record = await this.deps.store.get(id);
    const driver = this.deps.drivers[harnessId];
    const native = !record && driver.implemented ? await driver.findNative(nativeId).catch(() => null) : null;
    if (!record && !native) return null;
    return { id, harnessId, nativeId, record, native };
  }

  // ---- sessions -------------------------------------------------------------------------------

  /** Sessions the mesh recorded plus what every native store holds, newest first; rotated ids retired. */
  async list(filter: { harnessId?: HarnessId | null; projectId?: string | null }): Promise<SessionView[]> {
    const { store, drivers, places, log } = this.deps;
    const records = await store.list(filter);
    const views = new Map<string, SessionView>(records.map((r) => [r.id, viewOf(r)]));
    const ids = filter.harnessId ? [filter.harnessId] : (Object.keys(drivers) as HarnessId[]);
    const roots = filter.projectId ? await places.rootsOf(filter.projectId) : null;
    for (const harnessId of ids) {
      const driver = drivers[harnessId];
      if (!driver.implemented || !(await driver.locate())) continue;
      let natives: SessionSummary[];
      try {
        natives = await driver.listNative();
      } catch (err) {
        log.warn({ err, harnessId }, 'listing a native session store failed');
        continue;
      }
      const unrecorded: SessionSummary[] = [];
      for (const n of natives) {
        const existing = views.get(n.sessionId);
        if (existing) {
          existing.native = n;
          continue;
        }
        if (roots && !(n.cwd && roots.includes(await realpathDeep(n.cwd)))) continue;
        unrecorded.push(n);
      }
      // A native session whose id rotation retired is listed under its successor; one statement for the store.
      const retired = await store.retired(unrecorded.map((n) => n.sessionId));
      for (const n of unrecorded) {
        if (!retired.has(n.sessionId)) views.set(n.sessionId, { id: n.sessionId, harnessId: n.harnessId, nativeId: n.nativeId, record: null, native: n });
      }
    }
    const updated = (v: SessionView) => Math.max(v.record?.updatedAt.getTime() ?? 0, v.native?.updatedAt?.getTime() ?? 0);
    return [...views.values()].sort((a, b) => updated(b) - updated(a) || a.id.localeCompare(b.id));
  }

  /** A new session with an id the mesh pins (claude-code, qwen-code `--session-id`; pi by file path). */
  async start(harnessIdRaw: string, input: { projectId: string; workspaceId?: string | null; title?: string | null; model?: string | null; effort?: string | null }): Promise<SessionRecord> {
    const harnessId = requireHarnessId(harnessIdRaw);
    await this.require(harnessId, 'startSession', 'startSession');
    const driver = this.deps.drivers[harnessId];
    driver.checkChoice(input);
    const place = await this.deps.places.of(input.projectId, input.workspaceId ?? null);
    await driver.prepare();
    const nativeId = driver.newNativeId();
    await driver.pin(nativeId, place.cwd);
    const { record } = await this.deps.store.create({
      id: formatSessionId(harnessId, nativeId),
      harnessId,
      nativeId,
      projectId: place.projectId,
      workspaceId: place.workspaceId,
      cwd: place.cwd,
      title: input.title ?? null,
      origin: 'started',
      taskId: null,
      model: input.model ?? null,
      effort: input.effort ?? null,
    });
    return record;
  }

  /** The mesh's record of a session, a native one adopted first. */
  own(view: SessionView): Promise<SessionRecord> {
    return view.record ? Promise.resolve(view.record) : this.adopt(view);
  }

  /** {@link own} for a turn: a native session outside every project is refused before anything is recorded. */
  async ownForTurn(view: SessionView): Promise<SessionRecord> {
    return view.record ?? (await this.adopt(view, true));
  }

  /**
   * Records a native session, placing it in the project whose root (or worktree) is its cwd. With
   * `forTurn`, a session outside every project is refused before anything is recorded.
   */
  private async adopt(view: SessionView, forTurn = false): Promise<SessionRecord> {
    const n = view.native!;
    const place = n.cwd ? await this.deps.places.containing(n.cwd) : null;
    if (forTurn && !place) {
      throw new MeshError('FORBIDDEN', `session ${view.id} ran in ${n.cwd ?? 'an unknown directory'}, which is neither a project root nor a leased worktree; turns run only inside a project`);
    }
    const { record } = await this.deps.store.create({
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

  // ---- transcripts ----------------------------------------------------------------------------

  /** One page of the native transcript (the source of truth), oldest first. */
  async transcript(view: SessionView, first: number, after: string | null): Promise<{ entries: { cursor: string; entry: TranscriptEntry }[]; hasNextPage: boolean }> {
    const start = after ? decodeTranscriptCursor(after) + 1 : 0;
    const all = await this.deps.drivers[view.harnessId].transcript(view.nativeId);
    const page = all.slice(start, start + first);
    return { entries: page.map((entry, i) => ({ cursor: transcriptCursor(start + i), entry })), hasNextPage: start + first < all.length };
  }

  /** Transcript entries by id (memory capture's fetch-by-id). */
  async transcriptEntries(raw: string, ids: readonly string[]): Promise<TranscriptEntry[]> {
    const view = await this.resolve(raw);
    if (!view) return [];
    const wanted = new Set(ids);
    return (await this.deps.drivers[view.harnessId].transcript(view.nativeId)).filter((e) => wanted.has(e.id));
  }
}

function found(raw: string, field: string, view: SessionView | null): SessionView {
  if (!view) throw new MeshError('NOT_FOUND', `${field}: no session ${JSON.stringify(raw)} in the mesh or in its harness's store`);
  return view;
}

/** The view of a session the mesh recorded. */
export function viewOf(record: SessionRecord): SessionView {
  return { id: record.id, harnessId: record.harnessId, nativeId: record.nativeId, record, native: null };
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
