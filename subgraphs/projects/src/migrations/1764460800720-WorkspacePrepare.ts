import { sqlMigration } from '@keelson/platform';

/**
 * Workspace bases and preparation: where a lease's worktree branched from (`base`, `base_ref`,
 * `base_commit`) and its dependency preparation (`prepare`, JSON: command, status, exit code,
 * duration, log tail). Leases that exist before this migration read base HEAD with no ref, commit or
 * preparation recorded.
 */
export const WorkspacePrepare1764460800720 = sqlMigration('WorkspacePrepare1764460800720', {
  up: [
    "ALTER TABLE workspace_leases ADD COLUMN base text NOT NULL DEFAULT 'HEAD'",
    'ALTER TABLE workspace_leases ADD COLUMN base_ref text',
    'ALTER TABLE workspace_leases ADD COLUMN base_commit text',
    'ALTER TABLE workspace_leases ADD COLUMN prepare jsonb',
  ],
  down: [
    'ALTER TABLE workspace_leases DROP COLUMN prepare',
    'ALTER TABLE workspace_leases DROP COLUMN base_commit',
    'ALTER TABLE workspace_leases DROP COLUMN base_ref',
    'ALTER TABLE workspace_leases DROP COLUMN base',
  ],
});
