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

  @Field({
    description:
      "Whether the project's own workflows (`<root>/.keelson/workflows`) may run. Listed either way; starting one of an untrusted " +
      'project is FORBIDDEN. Created from a missing or empty folder: trusted; cloned: not; an existing folder: trusted unless it ' +
      'already has .keelson/workflows. Changed by setProjectTrust.',
  })
  @Column('boolean', { default: false })
  trusted!: boolean;

  @Field(() => Date)
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
