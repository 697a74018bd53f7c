import { isMeshError } from '@keelson/schema';
import { serviceCaller, type Logger, type ServiceCall, type ServiceIdentity } from '@keelson/service';
import type { CapturedTranscriptEntry, TranscriptSource } from './transcriptSource';

/** Codes that say "this request will never succeed": retrying cannot help. */
const PERMANENT = new Set(['BAD_USER_INPUT', 'NOT_FOUND', 'FORBIDDEN', 'CAPABILITY_UNSUPPORTED', 'GRAPHQL_VALIDATION_FAILED']);

/** Whether a service call failed with an answer no retry can fix (by the code the service answered with). */
function isPermanent(err: unknown): boolean {
  return isMeshError(err) && PERMANENT.has(String(err.details?.upstreamCode ?? ''));
}

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
  private readonly call: ServiceCall;

  constructor(
    /** The sessions subgraph's GraphQL endpoint. */
    readonly url: string,
    /** Who memory capture is to that subgraph (it refuses calls without an assertion). */
    identity: ServiceIdentity,
    private readonly log?: Logger,
  ) {
    this.call = serviceCaller('the sessions subgraph', url, { identity });
  }

  async entries(sessionId: string, ids: readonly string[], signal: AbortSignal): Promise<CapturedTranscriptEntry[]> {
    try {
      const data = await this.call<{ transcriptEntries: CapturedTranscriptEntry[] }>(QUERY, { sessionId, ids }, { signal });
      return data.transcriptEntries;
    } catch (err) {
      if (!isPermanent(err)) throw err;
      this.log?.warn({ err, sessionId, ids: ids.length }, 'the sessions subgraph refused a transcript fetch; its entries are skipped');
      return [];
    }
  }
}
