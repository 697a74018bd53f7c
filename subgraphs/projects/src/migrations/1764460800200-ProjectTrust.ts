import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `projects.trusted`: whether a project's own `.keelson/workflows` may run. Rows that exist before this
 * migration start untrusted — the mesh cannot tell any more whether they were cloned, or whether
 * their folder brought workflows of its own — so their project workflows are listed but refused until
 * an operator calls setProjectTrust.
 */
export class ProjectTrust1764460800200 implements MigrationInterface {
  name = 'ProjectTrust1764460800200';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE projects ADD COLUMN trusted boolean NOT NULL DEFAULT false');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE projects DROP COLUMN trusted');
  }
}
