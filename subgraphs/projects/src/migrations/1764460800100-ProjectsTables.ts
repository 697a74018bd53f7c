import type { MigrationInterface, QueryRunner } from 'typeorm';

export class ProjectsTables1764460800100 implements MigrationInterface {
  name = 'ProjectsTables1764460800100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE projects (
      id uuid PRIMARY KEY,
      name text NOT NULL UNIQUE,
      root_path text NOT NULL,
      canonical_root text NOT NULL UNIQUE,
      created_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE TABLE workspace_leases (
      id uuid PRIMARY KEY,
      project_id uuid NOT NULL REFERENCES projects(id),
      path text NOT NULL,
      branch text NOT NULL,
      purpose text,
      acquired_at timestamptz NOT NULL,
      released_at timestamptz
    )`);
    await q.query('CREATE INDEX workspace_leases_project ON workspace_leases (project_id, released_at)');
    await q.query(`CREATE TABLE mutation_locks (
      id uuid PRIMARY KEY,
      project_id uuid NOT NULL REFERENCES projects(id),
      purpose text NOT NULL,
      holder text NOT NULL,
      acquired_at timestamptz NOT NULL
    )`);
    await q.query('CREATE INDEX mutation_locks_project ON mutation_locks (project_id, acquired_at)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE mutation_locks');
    await q.query('DROP TABLE workspace_leases');
    await q.query('DROP TABLE projects');
  }
}
