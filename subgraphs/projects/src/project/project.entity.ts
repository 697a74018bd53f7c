import { Directive, Field, ID, ObjectType } from 'type-graphql';
import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** A registered project: a root folder (usually a git repository) agents work in. */
@ObjectType({ description: 'A registered project: a root folder (usually a git repository) agents work in.' })
@Directive('@key(fields: "id")')
@Entity('projects')
export class Project {
  @Field(() => ID)
  @PrimaryColumn('uuid')
  id!: string;

  @Field({ description: '1–64 characters: a-z 0-9 - _, starting with a letter or digit.' })
  @Column('text', { unique: true })
  name!: string;

  @Field({ description: 'The resolved absolute root path.' })
  @Column('text', { name: 'root_path' })
  rootPath!: string;

  /** realpath-canonical root: duplicate roots (symlink aliases included) conflict on it. */
  @Column('text', { name: 'canonical_root', unique: true })
  canonicalRoot!: string;

  /** What an operator (or the create rule) decided; the `trusted` field also needs the files unchanged (see the resolver). */
  @Column('boolean', { default: false })
  trusted!: boolean;

  /** The digest of `.keelson/workflows` when trust was given (see `workflowsDigest`); null while untrusted. */
  @Column('text', { name: 'trusted_workflows', nullable: true })
  trustedWorkflows!: string | null;

  @Field(() => Date)
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
