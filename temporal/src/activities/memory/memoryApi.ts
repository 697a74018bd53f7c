import { serviceCaller, type ServiceIdentity } from '@keelson/service';

/** A conversation range no summary covers yet (inclusive). */
export interface CompactionRange {
  conversationId: string;
  fromSeq: number;
  toSeq: number;
}

/** One message of a range, as compaction reads it. */
export interface RangeMessage {
  seq: number;
  role: string;
  content: string;
  createdAt: string;
}

/** A range's conversation and messages, with the summaries that already exist for it. */
export interface RangeContent {
  conversationId: string;
  sessionKey: string;
  agent: string;
  channel: string | null;
  messages: RangeMessage[];
  /** Set when a summary of exactly this range is already stored. */
  existingSummaryId: string | null;
}

export interface SavedSummary {
  id: string;
  fromSeq: number;
  toSeq: number;
  model: string | null;
}

/** What compaction needs of the memory subgraph. */
export interface MemoryApi {
  candidates(window: number, limit: number): Promise<CompactionRange[]>;
  /** The range's messages in order; null when the conversation does not exist. */
  range(range: CompactionRange): Promise<RangeContent | null>;
  /** Idempotent per range: a repeat returns the stored summary. */
  saveSummary(input: CompactionRange & { content: string; model: string | null }): Promise<SavedSummary>;
}

/**
 * The memory subgraph over its GraphQL API (KEELSON_MEMORY_URL; the worker imports no subgraph). Its
 * errors keep their registry code; an unreachable subgraph is SERVICE_UNAVAILABLE (retried).
 */
export function memoryGraphqlApi(url: string, opts: { timeoutMs?: number; identity: ServiceIdentity }): MemoryApi {
  const call = serviceCaller('the memory subgraph', url, { timeoutMs: opts.timeoutMs ?? 30_000, identity: opts.identity });
  return {
    async candidates(window, limit) {
      const data = await call<{ compactionCandidates: CompactionRange[] }>(
        'query ($w: Int, $l: Int) { compactionCandidates(window: $w, limit: $l) { conversationId fromSeq toSeq } }',
        { w: window, l: limit },
      );
      return data.compactionCandidates;
    },
    async range(r) {
      const first = r.toSeq - r.fromSeq + 1;
      const data = await call<{
        conversation: {
          id: string;
          sessionKey: string;
          agent: string;
          channel: string | null;
          summaries: { id: string; fromSeq: number; toSeq: number }[];
          messages: { edges: { node: RangeMessage }[] };
        } | null;
      }>(
        `query ($id: ID!, $first: Int, $after: String) {
          conversation(id: $id) {
            id sessionKey agent channel
            summaries { id fromSeq toSeq }
            messages(first: $first, after: $after) { edges { node { seq role content createdAt } } }
          }
        }`,
        { id: r.conversationId, first, after: String(r.fromSeq - 1) },
      );
      const c = data.conversation;
      if (!c) return null;
      return {
        conversationId: c.id,
        sessionKey: c.sessionKey,
        agent: c.agent,
        channel: c.channel,
        messages: c.messages.edges.map((e) => e.node).filter((m) => m.seq >= r.fromSeq && m.seq <= r.toSeq),
        existingSummaryId: c.summaries.find((s) => s.fromSeq === r.fromSeq && s.toSeq === r.toSeq)?.id ?? null,
      };
    },
    async saveSummary(input) {
      const data = await call<{ saveSummary: SavedSummary }>('mutation ($i: SummaryInput!) { saveSummary(input: $i) { id fromSeq toSeq model } }', { i: input });
      return data.saveSummary;
    },
  };
}
