import { sqlMigration } from '@keelson/platform';

/**
 * `projects.trusted`: whether a project's own `.keelson/workflows` may run. Rows that exist before this
 * migration start untrusted — the mesh cannot tell any more whether they were cloned, or whether
 * their folder brought workflows of its own — so their project workflows are listed but refused until
 * an operator calls setProjectTrust.
 */
export const ProjectTrust1764460800200 = sqlMigration('ProjectTrust1764460800200', {
  up: [
    'ALTER TABLE projects ADD COLUMN trusted boolean NOT NULL DEFAULT false',
  ],
  down: [
    'ALTER TABLE projects DROP COLUMN trusted',
  ],
});
