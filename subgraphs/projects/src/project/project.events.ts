import type { EventLog } from '@keelson/platform';
import { streams, type ProjectEventType } from '@keelson/schema';
import type { EntityManager } from 'typeorm';

/** Ids only: subscribers hydrate the project (and lease or lock) by id. */
export interface ProjectEventPayload {
  projectId: string;
  leaseId?: string;
  lockId?: string;
}

/** Appends a project event in the transaction of the change it reports. */
export function appendProjectEvent(
  events: EventLog,
  manager: EntityManager,
  type: ProjectEventType,
  payload: ProjectEventPayload,
) {
  return events.append(manager, { stream: streams.projects, key: payload.projectId, type, payload });
}
