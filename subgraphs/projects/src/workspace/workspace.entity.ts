import { Directive, Field, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** Where a lease's worktree branches from. */
export enum WorkspaceBase {
  ORIGIN_DEFAULT = 'ORIGIN_DEFAULT',
  HEAD = 'HEAD',
}

registerEnumType(WorkspaceBase, {
  name: 'WorkspaceBase',
  description: 'Where a workspace branches from.',
  valuesConfig: {
    ORIGIN_DEFAULT: {
      description:
        "After `git fetch origin`, the tip of the branch origin's HEAD names (origin/HEAD, else what origin announces). The default when the project has an origin.",
    },
    HEAD: { description: "The project's local HEAD commit. The default without an origin." },
  },
});

/** How a lease's prepare step ended. */
export enum WorkspacePrepareStatus {
  SKIPPED = 'SKIPPED',
  SUCCEEDED = 'SUCCEEDED',
  FAILED = 'FAILED',
}

registerEnumType(WorkspacePrepareStatus, {
  name: 'WorkspacePrepareStatus',
  description: "How a workspace's dependency preparation ended.",
  valuesConfig: {
    SKIPPED: { description: 'Nothing to prepare: no lockfile or manifest the mesh knows a command for.' },
    SUCCEEDED: { description: 'The prepare command exited 0.' },
    FAILED: { description: 'The prepare command could not start, exited non-zero or timed out (acquireWorkspace then fails with UPSTREAM_FAILED and leaves nothing behind).' },
  },
});

/** What the prepare step of a lease ran and how it ended (stored as JSON on the lease). */
@ObjectType({ description: "A workspace's dependency preparation: the command run sandboxed, with network, in the fresh worktree." })
export class WorkspacePrepare {
  @Field(() => [String], { nullable: true, description: 'The command and its arguments; null when SKIPPED.' })
  command!: string[] | null;

  @Field(() => String, { nullable: true, description: 'What chose the command: the file it was detected from (`package-lock.json`); null when SKIPPED.' })
  detectedFrom!: string | null;

  @Field(() => WorkspacePrepareStatus)
  status!: WorkspacePrepareStatus;

  @Field(() => Int, { nullable: true, description: 'The exit code; null when SKIPPED, killed by a signal, timed out or not started.' })
  exitCode!: number | null;

  @Field(() => Int, { nullable: true, description: 'How long it ran, in milliseconds; null when SKIPPED.' })
  durationMs!: number | null;

  @Field(() => String, { nullable: true, description: 'The end of its output (stdout and stderr interleaved, at most 16 KiB); null when SKIPPED.' })
  log!: string | null;
}

/** A durable lease on an isolated git worktree of a project, enumerable until released. */
@ObjectType({ description: 'A durable lease on an isolated, dependency-prepared git worktree of a project, enumerable until released.' })
@Directive('@key(fields: "id")')
@Entity('workspace_leases')
@Index(['projectId', 'releasedAt'])
export class WorkspaceLease {
  @Field(() => ID)
  @PrimaryColumn('uuid')
  id!: string;

  @Column('uuid', { name: 'project_id' })
  projectId!: string;

  @Field({ description: 'Absolute path of the worktree.' })
  @Column('text')
  path!: string;

  @Field({ description: 'The branch the worktree was created on.' })
  @Column('text')
  branch!: string;

  @Field(() => String, { nullable: true })
  @Column('text', { nullable: true })
  purpose!: string | null;

  @Field(() => WorkspaceBase, { description: 'Where the worktree branched from (leases older than bases read HEAD).' })
  @Column('text', { default: WorkspaceBase.HEAD })
  base!: WorkspaceBase;

  @Field(() => String, { nullable: true, description: 'The ref the base resolved through (`origin/main`, `HEAD`); null for leases older than bases.' })
  @Column('text', { name: 'base_ref', nullable: true })
  baseRef!: string | null;

  @Field(() => String, { nullable: true, description: 'The commit the branch was created at; null for leases older than bases.' })
  @Column('text', { name: 'base_commit', nullable: true })
  baseCommit!: string | null;

  @Field(() => WorkspacePrepare, { nullable: true, description: 'The dependency preparation; null for leases older than it.' })
  @Column('jsonb', { nullable: true })
  prepare!: WorkspacePrepare | null;

  @Field(() => Date)
  @Column('timestamptz', { name: 'acquired_at' })
  acquiredAt!: Date;

  @Column('timestamptz', { name: 'released_at', nullable: true })
  releasedAt!: Date | null;
}
