export { openChatsDomain } from './domain';
export type { OpenChatsDomainOptions, OpenedChatsDomain, ChatsServices } from './domain';
export type { ChatsExecutor, ChatLaunchRequest, ChatSendOutcome } from './executor';
export { ChatService } from './service/chat.service';
export type { ChatCommandOutcome, ChatRibs, ChatSeed, ChatServiceDeps, ChatTurnView, RibCommandEffect } from './service/chat.service';
export { ChatStore } from './store/chatStore';
export type { NewChat, ChatRecord, ChatMessageRecord, ChatTurnOutcome } from './store/chatStore';
export { chatMigrations, CHAT_MIGRATIONS_TABLE, ChatsTables1764460800800 } from './store/migrations';
