import { Directive, Field, ID, ObjectType } from 'type-graphql';

/** The runs subgraph's durable op: a swarm is one (its frames, cancelOp and steerOp work on it). */
@ObjectType({ description: 'A durable op (owned by the runs subgraph).' })
@Directive('@key(fields: "id", resolvable: false)')
export class Op {
  @Field(() => ID)
  id!: string;
}

/** The projects subgraph's entity: a swarm names its project by reference. */
@ObjectType({ description: 'A project (owned by the projects subgraph).' })
@Directive('@key(fields: "id", resolvable: false)')
export class Project {
  @Field(() => ID)
  id!: string;
}

/** The sessions subgraph's entity (a harness session); swarm agents run provider sessions, so this stays null for now. */
@ObjectType({ description: 'A harness session (owned by the sessions subgraph).' })
@Directive('@key(fields: "id", resolvable: false)')
export class HarnessSession {
  @Field(() => ID)
  id!: string;
}

/** The projects subgraph's worktree lease (a writer's, in write mode). */
@ObjectType({ description: 'A workspace lease: a git worktree (owned by the projects subgraph).' })
@Directive('@key(fields: "id", resolvable: false)')
export class WorkspaceLease {
  @Field(() => ID)
  id!: string;
}

