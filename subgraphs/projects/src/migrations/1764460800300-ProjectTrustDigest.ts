import { sqlMigration } from '@keelson/platform';

/**
 * `projects.trusted_workflows`: the digest of the project's `.keelson/workflows` at the moment it was
 * trusted. Trust holds only while the files are those: a changed or new workflow file needs
 * setProjectTrust again. Rows trusted before this migration have no digest, so they need it too.
 */
export const ProjectTrustDigest1764460800300 = sqlMigration('ProjectTrustDigest1764460800300', {
  up: ['ALTER TABLE projects ADD COLUMN trusted_workflows text'],
  down: ['ALTER TABLE projects DROP COLUMN trusted_workflows'],
});
