import { sqlMigration } from '@keelson/platform';

export const ProjectsTables1764460800100 = sqlMigration('ProjectsTables1764460800100', {
  up: [
    `CREATE TABLE projects (
      id uuid PRIMARY KEY,
      name text NOT NULL UNIQUE,
      root_path text NOT NULL,
      canonical_root text NOT NULL UNIQUE,
      created_at timestamptz NOT NULL DEFAULT now()
    )`,
    `CREATE TABLE workspace_leases (
      id uuid PRIMARY KEY,
      project_id uuid NOT NULL REFERENCES projects(id),
      path text NOT NULL,
      branch text NOT NULL,
      purpose text,
      acquired_at timestamptz NOT NULL,
      released_at timestamptz
    )`,
    'CREATE INDEX workspace_leases_project ON workspace_leases (project_id, released_at)',
    `CREATE TABLE mutation_locks (
      id uuid PRIMARY KEY,
      project_id uuid NOT NULL REFERENCES projects(id),
      purpose text NOT NULL,
      holder text NOT NULL,
      acquired_at timestamptz NOT NULL
    )`,
    'CREATE INDEX mutation_locks_project ON mutation_locks (project_id, acquired_at)',
  ],
  down: [
    'DROP TABLE mutation_locks',
    'DROP TABLE workspace_leases',
    'DROP TABLE projects',
  ],
});
