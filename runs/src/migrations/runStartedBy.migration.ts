import { sqlMigration } from '@keelson/platform';

/**
 * `runs.started_by`: the caller that started the run (subject, kind, scopes, token id), as the
 * assertion named it. A run's agent turns act as that caller where they reach other services (the
 * swarm rib's operator tools), never with more than it held. Null for runs started before this
 * migration and for in-memory runs.
 */
export const RunStartedBy1764460800340 = sqlMigration('RunStartedBy1764460800340', {
  up: ['ALTER TABLE runs ADD COLUMN started_by jsonb'],
  down: ['ALTER TABLE runs DROP COLUMN started_by'],
});
