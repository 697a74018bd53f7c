import { payloadOrNull } from '@keelson/kit';
import type { EventEnvelope, RunEventPayload, RunEventType } from '@keelson/schema';
import { RunEvent } from './runEvent.type';

/** A `runs` stream entry as the GraphQL `RunEvent`. */
export function toRunEvent(e: EventEnvelope<RunEventPayload>): RunEvent {
  const p = e.payload;
  return Object.assign(new RunEvent(), {
    cursor: e.cursor,
    type: e.type as RunEventType,
    runId: p.runId ?? e.key,
    launch: p.launch ?? 1,
    ...payloadOrNull(p, ['nodeId', 'attempt', 'pauseId', 'decision', 'exitCode', 'error']),
    at: e.at,
  });
}
