import { Field, Float, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { MemorySummary } from '../summary/summary.entity';
import type { Hit, HitKind, MatchKind, MemoryScopeValue } from './search.service';
import type { SearchMode } from './searchMode';

export const MemoryScope = { MESSAGES: 'MESSAGES', SUMMARIES: 'SUMMARIES', BOTH: 'BOTH' } as const satisfies { [K in MemoryScopeValue]: K };
registerEnumType(MemoryScope, { name: 'MemoryScope', description: 'What memorySearch looks through.' });

export const MemoryHitKind = { MESSAGE: 'MESSAGE', SUMMARY: 'SUMMARY' } as const satisfies { [K in HitKind]: K };
registerEnumType(MemoryHitKind, { name: 'MemoryHitKind', description: 'Whether a hit is a message or a summary.' });

export const MemoryMatch = { FULL_TEXT: 'FULL_TEXT', TRIGRAM: 'TRIGRAM', VECTOR: 'VECTOR', RECENCY: 'RECENCY' } as const satisfies {
  [K in MatchKind]: K;
};
registerEnumType(MemoryMatch, {
  name: 'MemoryMatch',
  description: 'Which retrieval found a hit: Postgres full text, trigram similarity (identifiers, paths), pgvector, or (contextForTurn) recency.',
});

export const MemorySearchMode = { LEXICAL: 'LEXICAL', HYBRID: 'HYBRID' } as const satisfies { [K in SearchMode]: K };
registerEnumType(MemorySearchMode, {
  name: 'MemorySearchMode',
  description: 'LEXICAL: full text + trigram. HYBRID: plus pgvector similarity (needs the extension and an embeddings endpoint).',
});

/** One result of memorySearch (or a source of contextForTurn). */
@ObjectType({ description: 'One result of memorySearch, or a source of contextForTurn.' })
export class MemoryHit {
  conversationId!: string;

  @Field(() => ID, { description: "The message's id; for a SUMMARY hit, the summary's id." })
  messageId!: string;

  @Field(() => MemoryHitKind)
  kind!: HitKind;

  @Field({ description: 'The message role; `summary` for summaries.' })
  role!: string;

  @Field({ description: 'An excerpt around the match (at most ~240 characters).' })
  snippet!: string;

  @Field({ description: 'The full text of the message or summary.' })
  content!: string;

  @Field(() => Float, { description: 'Reciprocal-rank-fusion score; higher is better, comparable within one result list.' })
  score!: number;

  @Field(() => Date)
  at!: Date;

  @Field(() => [MemoryMatch])
  matchedBy!: MatchKind[];

  @Field(() => Int, { nullable: true, description: "The message's position in its conversation (MESSAGE hits)." })
  seq!: number | null;

  @Field(() => MemorySummary, { nullable: true, description: 'The summary (SUMMARY hits).' })
  summary!: MemorySummary | null;
}

export function toMemoryHit(hit: Hit): MemoryHit {
  return Object.assign(new MemoryHit(), {
    conversationId: hit.conversationId,
    messageId: hit.id,
    kind: hit.kind,
    role: hit.role,
    snippet: hit.snippet,
    content: hit.content,
    score: hit.score,
    at: hit.at,
    matchedBy: hit.matchedBy,
    seq: hit.seq,
    summary:
      hit.kind === 'SUMMARY'
        ? Object.assign(new MemorySummary(), {
            id: hit.id,
            conversationId: hit.conversationId,
            fromSeq: hit.fromSeq,
            toSeq: hit.toSeq,
            content: hit.content,
            model: hit.model,
            createdAt: hit.at,
          })
        : null,
  });
}

@ObjectType({ description: 'Which memory search is active, and why.' })
export class MemorySearchModeInfo {
  @Field(() => MemorySearchMode, {
    description: 'The mode searches run in now: LEXICAL also while a configured HYBRID cannot embed queries (its endpoint failing; `reason` says "lexical for now" and when it failed).',
  })
  mode!: SearchMode;

  @Field({ description: 'pgvector can be enabled on the Postgres server.' })
  vectorExtensionAvailable!: boolean;

  @Field({ description: 'An embeddings endpoint is configured (KEELSON_EMBEDDINGS_URL and _MODEL).' })
  embeddingsConfigured!: boolean;

  @Field(() => String, { nullable: true })
  embeddingModel!: string | null;

  @Field({ description: 'A sentence saying why this mode is active: what is missing for HYBRID, or what HYBRID fuses (model, dimensions, index), and any failure of the embeddings endpoint.' })
  reason!: string;
}

@ObjectType({ description: 'The memory an agent should see for a turn, within a token budget.' })
export class TurnContext {
  @Field({ description: 'Ready to prepend to a prompt; empty when nothing fits or nothing is known.' })
  text!: string;

  @Field(() => Int, { description: 'Tokens of `text` by `tokenizer`; never above maxTokens.' })
  tokens!: number;

  @Field(() => Int)
  maxTokens!: number;

  @Field({ description: 'The BPE encoding tokens are counted with (cl100k_base).' })
  tokenizer!: string;

  @Field(() => [MemoryHit], { description: 'What `text` was built from: relevant hits by priority, then recent messages oldest first.' })
  sources!: MemoryHit[];
}
