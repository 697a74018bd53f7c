import { OperatorApprovals1764460800600 } from '@keelson/operator';
import { AgentTurnTables1764460800320 } from '@keelson/providers';
import { RunNodePrompt1764460800330 } from './runNodePrompt.migration';
import { RunStartedBy1764460800340 } from './runStartedBy.migration';
import { RunsTables1764460800300 } from './runsTables.migration';

/**
 * The runs domain's migrations, in order, recorded in `runs_migrations`: the runs subgraph runs them,
 * and so does a worker process (it may start first). The names and the table never change, so an
 * existing database upgrades in place.
 */
export const runsMigrations = [RunsTables1764460800300, AgentTurnTables1764460800320, RunNodePrompt1764460800330, RunStartedBy1764460800340, OperatorApprovals1764460800600];
export const RUNS_MIGRATIONS_TABLE = 'runs_migrations';

export { RunsTables1764460800300, RunNodePrompt1764460800330, RunStartedBy1764460800340 };
