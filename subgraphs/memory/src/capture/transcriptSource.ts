import { z } from 'zod';

/** One final entry of a session transcript, as its owner (the sessions subgraph) stores it. */
export interface CapturedTranscriptEntry {
  /** The native message id: stable across replays, the dedupe key in memory. */
  id: string;
  role: string;
  content: string;
  toolCalls?: unknown;
  createdAt?: Date | string | null;
  metadata?: Record<string, unknown> | null;
}

/**
 * The port capture fetches transcript bodies through (events carry ids only). The sessions subgraph
 * provides the real one; tests provide their own.
 */
export interface TranscriptSource {
  /**
   * The entries of `sessionId` with these ids, in any order; ids it does not know are left out.
   * Rejects when the transcript cannot be read now (capture retries from its cursor).
   */
  entries(sessionId: string, ids: readonly string[], signal: AbortSignal): Promise<CapturedTranscriptEntry[]>;
}

export const transcriptEntrySchema = z.object({
  id: z.string().min(1).max(512),
  role: z.string().min(1),
  content: z.string(),
  toolCalls: z.unknown().optional(),
  createdAt: z.union([z.date(), z.string(), z.null()]).optional(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
});
