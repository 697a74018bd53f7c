import { parseInput } from '@keelson/kit';
import { MeshError } from '@keelson/schema';
import { In, QueryFailedError } from 'typeorm';
import { z } from 'zod';
import { MAX_CONTENT_CHARS } from '../memory/memory.input';
import type { MemoryDeps } from '../settings';
import { MemorySummary } from './summary.entity';

/** Postgres foreign_key_violation. */
const FOREIGN_KEY_VIOLATION = '23503';

const seqSchema = z.number().int().min(1, 'must be at least 1');

/** A summary to store for `conversationId`'s messages `fromSeq`..`toSeq` (inclusive). */
export const newSummarySchema = z
  .strictObject({
    conversationId: z.uuid('must be a conversation id'),
    fromSeq: seqSchema,
    toSeq: seqSchema,
    content: z.string().trim().min(1, 'must not be empty').max(MAX_CONTENT_CHARS, `must be at most ${MAX_CONTENT_CHARS} characters`),
    model: z.string().trim().min(1).max(200).nullish(),
  })
  .refine((s) => s.toSeq >= s.fromSeq, { message: 'toSeq must not be below fromSeq', path: ['toSeq'] });

/** `compactionCandidates`' arguments: the window size and how many ranges to return. */
export const candidatesArgsSchema = z.object({
  window: z.number().int().min(2, 'must be at least 2').max(500, 'must be at most 500').nullish().transform((v) => v ?? 50),
  limit: z.number().int().min(1, 'must be at least 1').max(500, 'must be at most 500').nullish().transform((v) => v ?? 20),
});

/** A range of a conversation's messages (inclusive) that no summary covers yet. */
export interface SummaryRange {
  conversationId: string;
  fromSeq: number;
  toSeq: number;
}

/**
 * Summaries of message ranges. The compaction workflow (Temporal) writes them through `save`, which
 * is idempotent per (conversation, range): a retried activity stores one summary, not two.
 */
export class SummaryService {
  constructor(
    private readonly deps: MemoryDeps,
    /** Called after a summary is stored. */
    private readonly onCommitted: () => void = () => {},
  ) {}

  /** Stores the summary of a range once; a repeat returns the stored one unchanged. */
  async save(body: unknown): Promise<MemorySummary> {
    const s = parseInput(newSummarySchema, body, 'summary');
    try {
      await this.deps.dataSource.query(
        `INSERT INTO memory_summaries (conversation_id, from_seq, to_seq, content, model)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (conversation_id, from_seq, to_seq) DO NOTHING`,
        [s.conversationId, s.fromSeq, s.toSeq, s.content, s.model ?? null],
      );
    } catch (err) {
      if (err instanceof QueryFailedError && (err.driverError as { code?: string }).code === FOREIGN_KEY_VIOLATION) {
        throw new MeshError('NOT_FOUND', `summary.conversationId: conversation ${s.conversationId} does not exist`);
      }
      throw err;
    }
    this.onCommitted();
    return this.deps.dataSource
      .getRepository(MemorySummary)
      .findOneByOrFail({ conversationId: s.conversationId, fromSeq: s.fromSeq, toSeq: s.toSeq });
  }

  /**
   * What compaction summarises next: every full window of `window` messages (`k·window+1` ..
   * `(k+1)·window`) of a conversation that has no summary of exactly that range, the most recently
   * active conversations first, oldest window first within one. Windows are fixed, so two passes (or a
   * retried one) ask for the same ranges and `save` keeps one summary each. A conversation shorter
   * than one window is not long enough to compact.
   */
  async candidates(raw: { window?: number | null; limit?: number | null }): Promise<SummaryRange[]> {
    const { window, limit } = parseInput(candidatesArgsSchema, raw, 'compactionCandidates');
    const rows = (await this.deps.dataSource.query(
      `SELECT c.id AS conversation_id, w.k * $1 + 1 AS from_seq, (w.k + 1) * $1 AS to_seq
       FROM memory_conversations c
       CROSS JOIN LATERAL generate_series(0, c.last_seq / $1 - 1) AS w(k)
       WHERE c.last_seq >= $1
         AND NOT EXISTS (
           SELECT 1 FROM memory_summaries s WHERE s.conversation_id = c.id AND s.from_seq = w.k * $1 + 1 AND s.to_seq = (w.k + 1) * $1
         )
       ORDER BY c.updated_at DESC, c.id, w.k
       LIMIT $2`,
      [window, limit],
    )) as { conversation_id: string; from_seq: string; to_seq: string }[];
    return rows.map((r) => ({ conversationId: r.conversation_id, fromSeq: Number(r.from_seq), toSeq: Number(r.to_seq) }));
  }

  /** Summaries per conversation, in range order. */
  async ofConversations(ids: readonly string[]): Promise<MemorySummary[]> {
    return this.deps.dataSource
      .getRepository(MemorySummary)
      .find({ where: { conversationId: In([...ids]) }, order: { fromSeq: 'ASC', toSeq: 'ASC' } });
  }

  byIds(ids: readonly string[]): Promise<MemorySummary[]> {
    return this.deps.dataSource.getRepository(MemorySummary).findBy({ id: In(ids.filter((id) => /^\d{1,18}$/.test(id))) });
  }
}
