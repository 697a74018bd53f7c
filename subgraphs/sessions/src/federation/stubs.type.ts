import { Directive, Field, ID, ObjectType } from 'type-graphql';

/** The projects subgraph's entity: sessions and tasks name their project by reference. */
@ObjectType({ description: 'A project (owned by the projects subgraph).' })
@Directive('@key(fields: "id", resolvable: false)')
export class Project {
  @Field(() => ID)
  id!: string;
}

/**
 * The runs subgraph's entity: a task's Temporal run, named by its workflow id. The runs subgraph
 * resolves the rest of it where it knows the run.
 */
@ObjectType({ description: 'A Temporal-backed run (owned by the runs subgraph); for a task, its harnessTask workflow.' })
@Directive('@key(fields: "id", resolvable: false)')
export class Run {
  @Field(() => ID)
  id!: string;
}

/** The swarms subgraph's entity: a swarm gate names its swarm by reference. */
@ObjectType({ description: 'A swarm (owned by the swarms subgraph).' })
@Directive('@key(fields: "id", resolvable: false)')
export class Swarm {
  @Field(() => ID)
  id!: string;
}
