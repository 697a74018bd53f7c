import { SwarmTables1764460800600 } from './swarmTables.migration';

/**
 * The swarms domain's migrations, in order, recorded in `swarms_migrations`: the swarms subgraph runs
 * them, and so does a worker process (it may start first). The names and the table never change, so
 * an existing database upgrades in place.
 */
export const swarmMigrations = [SwarmTables1764460800600];
export const SWARM_MIGRATIONS_TABLE = 'swarms_migrations';

export { SwarmTables1764460800600 };
