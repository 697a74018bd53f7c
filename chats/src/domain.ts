import { IdempotencyKeys, openDomainState, type EventLog } from '@keelson/platform';
import type { Logger, PgTimeouts } from '@keelson/service';
import type { DataSource } from 'typeorm';
import type { ChatsExecutor } from './executor';
import { ChatService, type ChatRibs } from './service/chat.service';
import { ChatStore } from './store/chatStore';
import { chatMigrations, CHAT_MIGRATIONS_TABLE } from './store/migrations';

/** The chats domain's services, for its GraphQL face. */
export interface ChatsServices {
  chats: ChatService;
  store: ChatStore;
  events: EventLog;
  /** sendChatMessage's idempotency keys. */
  idempotency: IdempotencyKeys;
  dataSource: DataSource;
}

export interface OpenChatsDomainOptions {
  databaseUrl: string;
  /** Where chats run (`@keelson/temporal`'s `temporalChatsExecutor`). */
  executor: ChatsExecutor;
  /** Agents' seeds and ribs' tools (the rib host of the process serving chats). */
  ribs: ChatRibs;
  pg?: PgTimeouts;
  log: Logger;
}

export interface OpenedChatsDomain {
  services: ChatsServices;
  /** Closes the database (the executor is its opener's to close). */
  close(): Promise<void>;
}

/** Opens the chats domain: migrate the chat tables (under the database-wide migration lock), then the store and the service. */
export async function openChatsDomain(opts: OpenChatsDomainOptions): Promise<OpenedChatsDomain> {
  const state = await openDomainState({
    url: opts.databaseUrl,
    entities: [],
    migrations: chatMigrations,
    migrationsTableName: CHAT_MIGRATIONS_TABLE,
    log: opts.log,
    ...(opts.pg ? { pg: opts.pg } : {}),
    listenerName: 'keelson-chats-listener',
  });
  const { dataSource, events } = state;
  const store = new ChatStore(dataSource, events);
  return {
    services: { chats: new ChatService({ store, executor: opts.executor, ribs: opts.ribs, log: opts.log }), store, events, idempotency: new IdempotencyKeys(dataSource), dataSource },
    close: () => state.close(),
  };
}
