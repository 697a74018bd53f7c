import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db';
import { PgSessionStore } from '../sessions/sessionStore';
import { AgentTurnTables1764460800320 } from './agentTurnTables.migration';
import { PgUsageLedger, type UsageRecord } from './usageLedger';

describe('the usage ledger and sessions in Postgres', () => {
  let db: TestDatabase;
  let pool: Pool;

  beforeAll(async () => {
    db = await createTestDatabase('keelson_turns');
    pool = new Pool({ connectionString: db.url, max: 2 });
    pool.on('error', () => undefined);
    const migration = new AgentTurnTables1764460800320();
    await migration.up(pool);
    // Idempotent: a second service listing the same migration boots too.
    await migration.up(pool);
  });
  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  it('writes one row per turn id, listed by rib or by run in write order', async () => {
    const ledger = new PgUsageLedger(pool);
    const runId = randomUUID();
    const row = (over: Partial<UsageRecord>): UsageRecord => ({
      id: randomUUID(),
      ribId: 'notes',
      surface: 'rib',
      providerId: 'anthropic',
      model: 'claude-haiku-4-5',
      inputTokens: 12,
      outputTokens: 3,
      status: 'ok',
      stopReason: 'end',
      rounds: 1,
      toolCalls: 0,
      durationMs: 40,
      ...over,
    });
    const first = row({});
    await ledger.record(first);
    await ledger.record(first);
    await ledger.record(row({ ribId: null, surface: 'workflow', runId, nodeId: 'think', workflowName: 'wf', status: 'timeout', stopReason: 'timeout' }));
    expect(await ledger.list({ ribId: 'notes' })).toEqual([{ ...first, createdAt: expect.any(String) }]);
    expect(await ledger.list({ runId })).toEqual([
      expect.objectContaining({ ribId: null, surface: 'workflow', runId, nodeId: 'think', workflowName: 'wf', stopReason: 'timeout' }),
    ]);
  });

  it('keeps a session and replaces it on the next save', async () => {
    const sessions = new PgSessionStore(pool);
    const id = `anthropic:${randomUUID()}`;
    await sessions.save({ id, providerId: 'anthropic', model: 'm1', ribId: 'notes', messages: [{ role: 'user', text: 'hi' }] });
    await sessions.save({
      id,
      providerId: 'anthropic',
      model: 'm2',
      ribId: 'notes',
      messages: [
        { role: 'user', text: 'hi' },
        { role: 'assistant', text: 'hello', toolCalls: [] },
      ],
    });
    expect(await sessions.load(id)).toEqual({ id, providerId: 'anthropic', model: 'm2', ribId: 'notes', messages: [{ role: 'user', text: 'hi' }, { role: 'assistant', text: 'hello', toolCalls: [] }] });
    expect(await sessions.load('anthropic:nope')).toBeUndefined();
  });
});
