import { randomUUID } from 'node:crypto';
import type { DomainState } from '@keelson/platform';
import { streams } from '@keelson/schema';
import { openTestDomainState } from '../../../test/support/domainState';
import { ChatStore } from './chatStore';
import { chatMigrations, CHAT_MIGRATIONS_TABLE } from './migrations';

/** The chat tables and their events on real Postgres: one turn at a time, each write once. */
describe('ChatStore', () => {
  let state: DomainState;
  let store: ChatStore;

  beforeAll(async () => {
    state = await openTestDomainState(chatMigrations, CHAT_MIGRATIONS_TABLE);
    store = new ChatStore(state.dataSource, state.events);
  });
  afterAll(() => state?.close());

  async function newChat(): Promise<string> {
    const id = randomUUID();
    await store.create({ id, title: 't', ribId: null, agent: null, projectId: null, systemPrompt: null, provider: null, model: null, tools: [], startedBy: null, temporalWorkflowId: `chat-${id}` });
    return id;
  }

  async function typesOf(chatId: string): Promise<string[]> {
    const rows = (await state.dataSource.query('SELECT type FROM events WHERE stream = $1 AND key = $2 ORDER BY seq', [streams.chats, chatId])) as { type: string }[];
    return rows.map((r) => r.type);
  }

  it('opens a turn once however often asked, and refuses another while it is in flight', async () => {
    const chatId = await newChat();
    const turn = { turnId: randomUUID(), messageId: randomUUID(), text: 'hello' };
    await store.openTurn(chatId, turn);
    await store.openTurn(chatId, turn);
    await expect(store.openTurn(chatId, { turnId: randomUUID(), messageId: randomUUID(), text: 'again' })).rejects.toMatchObject({ code: 'TURN_IN_FLIGHT' });
    expect((await store.get(chatId))!).toMatchObject({ status: 'RESPONDING', turnInFlight: turn.turnId });
    expect((await store.messages(chatId, { first: 10 })).map((m) => [m.role, m.text, m.seq])).toEqual([['USER', 'hello', 1]]);
    expect(await typesOf(chatId)).toEqual(['CHAT_STARTED', 'CHAT_MESSAGE', 'CHAT_TURN_STARTED']);
  });

  it('settles a turn once: the answer, the session, IDLE; live events after it are dropped', async () => {
    const chatId = await newChat();
    const turnId = randomUUID();
    await store.openTurn(chatId, { turnId, messageId: randomUUID(), text: 'q' });
    await store.turnEvent(chatId, turnId, 'CHAT_TOOL_CALL', { tool: 'x', toolUseId: 'u1' });
    const outcome = { status: 'ok' as const, text: 'a', messageId: randomUUID(), sessionId: 's-1' };
    await store.settleTurn(chatId, turnId, outcome);
    await store.settleTurn(chatId, turnId, outcome);
    await store.turnEvent(chatId, turnId, 'CHAT_DELTA', { text: 'late' });
    expect((await store.get(chatId))!).toMatchObject({ status: 'IDLE', turnInFlight: null, turns: 1, sessionId: 's-1' });
    expect((await store.messages(chatId, { first: 10 })).map((m) => [m.role, m.text])).toEqual([
      ['USER', 'q'],
      ['ASSISTANT', 'a'],
    ]);
    expect(await typesOf(chatId)).toEqual(['CHAT_STARTED', 'CHAT_MESSAGE', 'CHAT_TURN_STARTED', 'CHAT_TOOL_CALL', 'CHAT_MESSAGE', 'CHAT_TURN_ENDED']);
    // A failed turn without an answer keeps the session it had and still frees the chat.
    const next = randomUUID();
    await store.openTurn(chatId, { turnId: next, messageId: randomUUID(), text: 'q2' });
    await store.settleTurn(chatId, next, { status: 'error', text: '', messageId: randomUUID(), error: 'model down' });
    expect((await store.get(chatId))!).toMatchObject({ status: 'IDLE', turns: 2, sessionId: 's-1' });
    expect((await store.messages(chatId, { first: 10, afterSeq: 2 })).map((m) => m.text)).toEqual(['q2']);
  });

  it('lists newest first and pages by seq', async () => {
    const a = await newChat();
    const b = await newChat();
    const page = await store.list({ first: 2 });
    expect(page.map((c) => c.id)).toEqual([b, a]);
    expect((await store.list({ first: 1, beforeSeq: page[0]!.seq })).map((c) => c.id)).toEqual([a]);
  });
});
