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
export type NewSummary = z.infer<typeof newSummarySchema>;

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
