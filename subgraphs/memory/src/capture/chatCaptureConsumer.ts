import { DurableConsumer, type DurableConsumerOptions } from '@keelson/platform';
import { streams, type EventEnvelope } from '@keelson/schema';
import type { EntityManager } from 'typeorm';
import { z } from 'zod';
import { clipContent, type MemoryEntry } from '../memory/memory.input';
import type { MemoryService } from '../memory/memory.service';

export interface ChatCaptureConsumerOptions extends Omit<DurableConsumerOptions, 'name' | 'stream'> {
  memory: MemoryService;
  /** @default memory-chat-capture */
  name?: string;
  /** @default chats */
  stream?: string;
}

const chatMessageSchema = z.object({
  turnId: z.string().min(1),
  messageId: z.string().min(1),
  role: z.enum(['USER', 'ASSISTANT']),
  text: z.string(),
  ribId: z.string().optional(),
  agent: z.string().optional(),
});

/** The conversation a chat's messages are stored in. */
export const chatSessionKey = (chatId: string) => `chat:${chatId}`;
/** The agent of a chat's messages (what `contextForTurn` / `memorySearch` filter by): its rib's agent, else `chat`. */
export const chatAgent = (ribId: string | undefined, agent: string | undefined) => (ribId && agent ? `chat:${ribId}:${agent}` : ribId ? `chat:${ribId}` : 'chat');

interface ChatMessages {
  chatId: string;
  agent: string;
  ribId: string | null;
  entries: MemoryEntry[];
}

/**
 * Chat capture: tails the `chats` stream and stores every chat message in memory, exactly once (see
 * DurableConsumer). A CHAT_MESSAGE carries the whole message, so nothing is fetched: it becomes one
 * message of the conversation `chat:<chatId>` (agent `chat:<rib>:<agent slug>`, channel `chat`), with
 * the message's id as its dedupe key.
 */
export class ChatCaptureConsumer extends DurableConsumer<ChatMessages[]> {
  constructor(private readonly opts: ChatCaptureConsumerOptions) {
    super({ ...opts, name: opts.name ?? 'memory-chat-capture', stream: opts.stream ?? streams.chats });
  }

  protected async prepare(events: readonly EventEnvelope[]): Promise<ChatMessages[]> {
    const byChat = new Map<string, ChatMessages>();
    for (const e of events) {
      if (e.type !== 'CHAT_MESSAGE') continue;
      const r = chatMessageSchema.safeParse(e.payload);
      if (!r.success) {
        this.opts.log.warn({ consumer: this.name, seq: e.seq, issues: r.error.issues }, 'skipping a malformed chats event');
        continue;
      }
      const m = r.data;
      const agent = chatAgent(m.ribId, m.agent);
      const chat = byChat.get(e.key) ?? { chatId: e.key, agent, ribId: m.ribId ?? null, entries: [] };
      chat.entries.push({
        sessionId: chatSessionKey(e.key),
        agent,
        channel: 'chat',
        role: m.role === 'USER' ? 'user' : 'assistant',
        content: clipContent(m.text),
        dedupeKey: m.messageId,
        createdAt: e.at,
        metadata: { kind: 'chat', chatId: e.key, turnId: m.turnId },
      });
      byChat.set(e.key, chat);
    }
    return [...byChat.values()];
  }

  protected async apply(m: EntityManager, prepared: ChatMessages[]): Promise<void> {
    for (const chat of prepared) {
      await this.opts.memory.upsertConversations(m, [{ sessionKey: chatSessionKey(chat.chatId), agent: chat.agent, channel: 'chat', metadata: { chatId: chat.chatId, ribId: chat.ribId } }]);
      await this.opts.memory.appendMany(chat.entries, m);
    }
  }
}
