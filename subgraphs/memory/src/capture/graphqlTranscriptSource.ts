import type { Logger } from '@keelson/service';
import { PermanentGraphqlError, postGraphql } from './graphqlClient';
import type { TranscriptEntry, TranscriptSource } from './transcriptSource';

const QUERY = `query MemoryCaptureTranscript($sessionId: ID!, $ids: [ID!]!) {
  transcriptEntries(sessionId: $sessionId, ids: $ids) { id role content toolCalls createdAt metadata }
}`;

/**
 * The real TranscriptSource: the sessions subgraph's `transcriptEntries(sessionId, ids)` over HTTP
 * (KEELSON_SESSIONS_URL). An answer no retry can fix (a SessionId the sessions subgraph rejects or
 * does not know) reads as "no entries", so capture logs the ids as missing and moves on; anything
 * else (unreachable, 5xx, internal error, timeout) rejects and capture retries from its cursor.
 */
export class GraphqlTranscriptSource implements TranscriptSource {
  constructor(
    /** The sessions subgraph's GraphQL endpoint. */
    readonly url: string,
    private readonly log?: Logger,
  ) {}

  async entries(sessionId: string, ids: readonly string[], signal: AbortSignal): Promise<TranscriptEntry[]> {
    try {
      const data = await postGraphql<{ transcriptEntries: TranscriptEntry[] }>(this.url, QUERY, { sessionId, ids }, signal);
      return data.transcriptEntries;
    } catch (err) {
      if (!(err instanceof PermanentGraphqlError)) throw err;
      this.log?.warn({ err, sessionId, ids: ids.length }, 'the sessions subgraph refused a transcript fetch; its entries are skipped');
      return [];
    }
  }
}
