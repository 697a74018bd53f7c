import { openDomainState, type DomainState, type DomainStateOptions } from '@keelson/platform';
import { silentLogger } from '@keelson/service';
import { createTestDatabase } from './db';

/**
 * A domain's state over a fresh test database: its migrations run and its event log listening, as a
 * subgraph opens it; `close()` closes it and drops the database.
 */
export async function openTestDomainState(migrations: DomainStateOptions['migrations'], migrationsTableName: string): Promise<DomainState> {
  const db = await createTestDatabase();
  let state: DomainState;
  try {
    state = await openDomainState({ url: db.url, entities: [], migrations, migrationsTableName, log: silentLogger() });
  } catch (err) {
    await db.drop();
    throw err;
  }
  return {
    ...state,
    async close() {
      await state.close();
      await db.drop();
    },
  };
}
