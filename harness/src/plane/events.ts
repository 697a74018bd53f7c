import type { EventNotifier } from '@keelson/platform';
import { decodeCursor, MeshError, streams } from '@keelson/schema';
import type { Logger } from '@keelson/service';
import type { DataSource } from 'typeorm';
import type { HarnessEvent } from '../contract';
import { classifySessionRef, requireHarnessId, type HarnessId, type SessionId } from '../ids';
import type { Sessions } from './sessions';
import type { HarnessStore } from './store';
import { followHarnessEvents, type HarnessEventTail, type HarnessTailFilter } from './tail';

export interface HarnessEventsDeps {
  store: HarnessStore;
  sessions: Sessions;
  dataSource: DataSource;
  notifier: EventNotifier;
  log: Logger;
}

/** The `harness` stream read back: replay after a cursor, then follow; one session's lineage, one harness, or all. */
export class HarnessEvents {
  constructor(private readonly deps: HarnessEventsDeps) {}

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
      const view = await this.deps.sessions.resolveRef(ref);
      const id = view?.id ?? (ref.kind === 'canonical' ? ref.parsed.sessionId : null);
      if (!id) throw new MeshError('NOT_FOUND', `sessionId: no session ${JSON.stringify(filter.sessionId)}`);
      if (f.harnessId && !id.startsWith(`${f.harnessId}:`)) throw new MeshError('BAD_USER_INPUT', `sessionId ${id} is not a session of harness ${f.harnessId}`);
      f.harnessId = undefined;
      f.sessionIds = await this.deps.store.lineage(id);
    }
    return followHarnessEvents(this.deps.dataSource, this.deps.notifier, cursor, f);
  }

  /** The harness stream's current end (subscriptions "from now"). */
  private async streamEnd(): Promise<number> {
    const [row] = (await this.deps.dataSource.query('SELECT last_seq FROM event_streams WHERE stream = $1', [streams.harness])) as { last_seq: string }[];
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
    })().catch((err: unknown) => this.deps.log.warn({ err }, 'a harness subscription ended'));
    return () => {
      stopped = true;
      void tail?.return?.();
    };
  }
}

function decodeCursorOrBad(after: string | null): number {
  try {
    return decodeCursor(after);
  } catch {
    throw new MeshError('BAD_USER_INPUT', 'after: expected a cursor previously received from this stream');
  }
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
