import { parseInput } from '@keelson/kit';
import { z } from 'zod';
import { agentSchema } from '../memory/memory.input';
import type { MemoryDeps } from '../settings';
import { EmbeddingsClient, toVectorLiteral } from './embeddings';
import type { SearchModeState } from './searchMode';
import { snippet } from './snippet';
import { hnswEfSearch, indexedVector, type VectorStore } from './vectorStore';

export type MemoryScopeValue = 'MESSAGES' | 'SUMMARIES' | 'BOTH';
export type HitKind = 'MESSAGE' | 'SUMMARY';
/** Which retrieval found a hit; RECENCY marks context items chosen for being recent. */
export type MatchKind = 'FULL_TEXT' | 'TRIGRAM' | 'VECTOR' | 'RECENCY';

/** One search result, message or summary, with everything the GraphQL hit and contextForTurn need. */
export interface Hit {
  kind: HitKind;
  /** The message's id, or the summary's for SUMMARY hits. */
  id: string;
  conversationId: string;
  sessionKey: string;
  agent: string;
  /** `summary` for summaries. */
  role: string;
  content: string;
  snippet: string;
  /** Reciprocal-rank-fusion score: comparable within one result list only. */
  score: number;
  at: Date;
  matchedBy: MatchKind[];
  /** The message's position (MESSAGE hits). */
  seq: number | null;
  /** The summarised range (SUMMARY hits). */
  fromSeq: number | null;
  toSeq: number | null;
  /** The model that wrote a summary (SUMMARY hits). */
  model: string | null;
}

export const searchArgsSchema = z.object({
  query: z.string().trim().min(1, 'must not be empty').max(1_000, 'must be at most 1000 characters'),
  agent: agentSchema.nullish(),
  limit: z.number().int().min(1, 'must be at least 1').max(100, 'must be at most 100').nullish().transform((v) => v ?? 10),
  scope: z.enum(['MESSAGES', 'SUMMARIES', 'BOTH']).nullish().transform((v) => v ?? 'BOTH'),
});
export type SearchArgs = z.input<typeof searchArgsSchema>;

/** pg_trgm word similarity a fuzzy identifier match needs. */
const WORD_SIMILARITY_THRESHOLD = 0.7;

/** Matches per full-text leg that are ranked: the most recent ones. */
const FULL_TEXT_WINDOW = 2_000;

/** RRF's damping constant (Cormack et al.): a hit at rank r of a leg adds weight / (K + r). */
const RRF_K = 60;
/** Each leg's weight in the fusion; the relaxed any-term full-text leg counts for less than all-terms. */
const LEG_WEIGHTS = { fts: 1.0, fts_any: 0.6, trgm: 1.0, vec: 1.0 } as const;
type Leg = keyof typeof LEG_WEIGHTS;
/**
 * Legs that match the query as a whole: all its terms, or an identifier or path in it. Their hits
 * rank above hits of the other legs (some of its terms, or only near it as a vector), so a vector
 * neighbour never outranks an exact match: the vector leg always answers, however far its nearest is.
 */
const WHOLE_QUERY_LEGS: readonly Leg[] = ['fts', 'trgm'];
const MATCH_OF_LEG: Record<Leg, MatchKind> = { fts: 'FULL_TEXT', fts_any: 'FULL_TEXT', trgm: 'TRIGRAM', vec: 'VECTOR' };

const TABLES = {
  message: 'memory_messages',
  summary: 'memory_summaries',
} as const;
type ItemKind = keyof typeof TABLES;

/**
 * The query's terms OR-ed: plainto_tsquery's `'a' & 'b'` with its operators swapped (lexemes never
 * hold spaces, so only operators change); NULL when the query has no lexemes. Immutable, so indexable.
 */
const ANY_TERMS = "NULLIF(replace(plainto_tsquery('english', $1)::text, ' & ', ' | '), '')::tsquery";

/** `%text%` for ILIKE with the pattern characters escaped. */
function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Code-looking tokens: a camelCase hump, `_`, `/`, `.`, `-` or letters next to digits. */
const CODE_TOKEN = /^(?=.{4,128}$)[\p{L}\p{N}_./\\:-]*(?:\p{Ll}\p{Lu}|[_./\\:-]\p{L}|\p{L}\p{N}|\p{N}\p{L})[\p{L}\p{N}_./\\:-]*$/u;
const MAX_TRIGRAM_TERMS = 4;

/** A trigram-leg term: matched as a substring, and fuzzily (pg_trgm word similarity) when `fuzzy`. */
export interface TrigramTerm {
  term: string;
  fuzzy: boolean;
}

/**
 * What the trigram leg looks for: every code-looking token of the query (substring and fuzzy: a
 * fragment, a path, a typo of a name), and a one-word query as a substring (a word inside an
 * identifier, which full text cannot see). Plain words otherwise are full text's: fuzzy-matching
 * them would recheck thousands of rows for nothing.
 */
export function trigramTerms(query: string): TrigramTerm[] {
  const words = query.split(/\s+/).filter(Boolean);
  const terms = new Map<string, TrigramTerm>();
  for (const word of words) {
    const token = word.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, '');
    if (CODE_TOKEN.test(token)) terms.set(token, { term: token, fuzzy: true });
  }
  if (words.length === 1 && !terms.size && query.length >= 3) terms.set(query, { term: query, fuzzy: false });
  return [...terms.values()].slice(0, MAX_TRIGRAM_TERMS);
}

/** Placeholders of one search statement: $1 query, $2 agent (or null), $3 candidates per leg, $4 limit, then the optional ones. */
interface Placeholders {
  /** The query's vector, its length and the store's space (the vector leg). */
  vector?: { value: string; space: string; maxDistance: string; store: VectorStore };
  /** Per trigram term: its placeholder when fuzzy, and its ILIKE pattern's. */
  terms: { term?: string; like: string }[];
}

/** One leg of the search: the best `$3` items of one table by one retrieval, numbered by rank. */
function legSql(kind: ItemKind, leg: Leg, p: Placeholders): string {
  const t = TABLES[kind];
  // A message carries its conversation's agent, so the filter is a condition of the leg's index
  // (its GIN, its recency btree); summaries, a few per conversation, take it from the conversation.
  const agent = kind === 'message' ? '($2::text IS NULL OR t.agent = $2)' : '($2::text IS NULL OR c.agent = $2)';
  const from = kind === 'message' ? `${t} t` : `${t} t JOIN memory_conversations c ON c.id = t.conversation_id`;
  // Each leg ranks inside a LIMITed subquery, then numbers its rows by that rank.
  const ranked = (score: string, where: string) =>
    `SELECT '${kind}'::text AS kind, id, '${leg}'::text AS leg, row_number() OVER (ORDER BY score DESC, id DESC) AS rnk
     FROM (SELECT t.id, ${score} AS score FROM ${from} WHERE ${where} AND ${agent} ORDER BY score DESC, t.id DESC LIMIT $3) x`;
  // Full text ranks the most recent matches only: a common word matches half the store, and ranking
  // every match would cost what the store's size costs. Recent is what memory prefers anyway.
  const rankedRecent = (score: (alias: string) => string, where: string) =>
    `SELECT '${kind}'::text AS kind, id, '${leg}'::text AS leg, row_number() OVER (ORDER BY score DESC, id DESC) AS rnk
     FROM (SELECT id, ${score('w')} AS score FROM (
             SELECT t.id, t.content_tsv FROM ${from} WHERE ${where} AND ${agent} ORDER BY t.created_at DESC LIMIT ${FULL_TEXT_WINDOW}
           ) w ORDER BY score DESC, id DESC LIMIT $3) x`;
  switch (leg) {
    case 'fts':
      // All terms (websearch syntax: "phrases", or, -exclusions), ranked by cover density.
      return rankedRecent((a) => `ts_rank_cd(${a}.content_tsv, websearch_to_tsquery('english', $1), 32)`, "t.content_tsv @@ websearch_to_tsquery('english', $1)");
    case 'fts_any':
      // Any term: recall for natural-language turns where not every word appears.
      return rankedRecent((a) => `ts_rank(${a}.content_tsv, ${ANY_TERMS}, 32)`, `t.content_tsv @@ ${ANY_TERMS}`);
    case 'trgm': {
      // Identifiers and paths: a case-insensitive substring, or a fuzzy match of a term against the
      // best-matching extent of the text (pg_trgm word similarity).
      const where = p.terms.map(({ term, like }) => (term ? `t.content ILIKE ${like} OR t.content %> ${term}` : `t.content ILIKE ${like}`)).join(' OR ');
      const scores = p.terms.map(({ term, like }) =>
        term ? `CASE WHEN t.content ILIKE ${like} THEN 1.0 ELSE word_similarity(${term}, t.content) END` : `1.0`,
      );
      return ranked(scores.length === 1 ? scores[0]! : `GREATEST(${scores.join(', ')})`, `(${where})`);
    }
    case 'vec': {
      // Nearest first by cosine distance. With an index, the expression and predicate are the
      // index's own, and the order is the distance alone, so the HNSW scan supplies it (continuing
      // past rows the agent filter drops); without, vectors of another length are left out.
      const v = p.vector!;
      let distance = `e.embedding <=> ${v.value}::vector`;
      let where = `e.model = ${v.space} AND e.item_kind = '${kind}' AND vector_dims(e.embedding) = vector_dims(${v.value}::vector)`;
      if (v.store.index === 'hnsw') {
        const indexed = indexedVector(v.store, 'e.');
        distance = `${indexed.expression} <=> ${v.value}::vector(${v.store.dimensions})`;
        where = indexed.predicate(kind, v.space);
      }
      // The floor applies to the nearest `$3`, not inside the scan: an index scan would otherwise
      // look through every vector for neighbours that are not there.
      return `SELECT '${kind}'::text AS kind, id, 'vec'::text AS leg, row_number() OVER (ORDER BY distance, id DESC) AS rnk
        FROM (SELECT t.id, ${distance} AS distance
              FROM memory_embeddings e JOIN ${from} ON t.id = e.item_id
              WHERE ${where} AND ${agent}
              ORDER BY distance LIMIT $3) x
        WHERE distance < ${v.maxDistance}`;
    }
  }
}

/** A row of the search statement. */
interface SearchRow {
  kind: ItemKind;
  id: string;
  score: number;
  legs: Leg[];
  conversation_id: string;
  session_key: string;
  agent: string;
  role: string;
  content: string;
  at: Date;
  seq: string | null;
  from_seq: string | null;
  to_seq: string | null;
  model: string | null;
}

/**
 * memorySearch: full-text (websearch syntax, ranked by ts_rank_cd) and trigram similarity (for
 * identifiers and paths) over messages, summaries or both, plus pgvector similarity in HYBRID mode;
 * the legs are fused by reciprocal rank, matches of the whole query first, ties going to the more
 * recent item. One SQL statement.
 */
export class SearchService {
  private readonly embeddings: EmbeddingsClient | undefined;

  constructor(
    private readonly deps: MemoryDeps,
    private readonly state: SearchModeState,
    /** Called when the embeddings endpoint answers again after failing (the indexer catches up). */
    private readonly onEmbeddingsRecovered: () => void = () => undefined,
  ) {
    this.embeddings = state.store && deps.settings.embeddings ? new EmbeddingsClient(deps.settings.embeddings) : undefined;
  }

  async search(args: SearchArgs): Promise<Hit[]> {
    const { query, rows } = await this.execute(args, '');
    return (rows as SearchRow[]).map((r) => ({
      kind: r.kind === 'message' ? 'MESSAGE' : 'SUMMARY',
      id: r.id,
      conversationId: r.conversation_id,
      sessionKey: r.session_key,
      agent: r.agent,
      role: r.role,
      content: r.content,
      snippet: snippet(r.content, query),
      score: r.score,
      at: r.at,
      matchedBy: [...new Set(r.legs.map((l) => MATCH_OF_LEG[l]))],
      seq: r.seq == null ? null : Number(r.seq),
      fromSeq: r.from_seq == null ? null : Number(r.from_seq),
      toSeq: r.to_seq == null ? null : Number(r.to_seq),
      model: r.model,
    }));
  }

  /**
   * The plan Postgres runs a search with (`EXPLAIN (ANALYZE, FORMAT JSON)`: it is run), under the
   * same planner settings: which index each leg used, for tests and for finding out why a search is slow.
   */
  async explain(args: SearchArgs): Promise<unknown> {
    const { rows } = await this.execute(args, 'EXPLAIN (ANALYZE, FORMAT JSON) ');
    return (rows as { 'QUERY PLAN': unknown }[])[0]!['QUERY PLAN'];
  }

  /** Builds the one search statement for `args` and runs it, behind `prefix`, under the search's planner settings. */
  private async execute(args: SearchArgs, prefix: string): Promise<{ query: string; rows: unknown[] }> {
    const { query, agent, limit, scope } = parseInput(searchArgsSchema, args);
    const kinds: ItemKind[] = scope === 'MESSAGES' ? ['message'] : scope === 'SUMMARIES' ? ['summary'] : ['message', 'summary'];
    const params: unknown[] = [query, agent ?? null, Math.max(limit * 3, 30), limit];
    const placeholder = (value: unknown) => `$${params.push(value)}`;
    const legs: Leg[] = ['fts', 'fts_any'];
    const p: Placeholders = { terms: [] };
    const vector = await this.queryVector(query);
    const store = this.state.store;
    if (vector && store) {
      legs.push('vec');
      p.vector = {
        value: placeholder(toVectorLiteral(vector)),
        space: placeholder(store.space),
        // Cosine distance is 1 - similarity.
        maxDistance: placeholder(1 - (this.deps.settings.embeddings?.minSimilarity ?? 0)),
        store,
      };
    }
    const terms = trigramTerms(query);
    if (terms.length) {
      legs.push('trgm');
      p.terms = terms.map(({ term, fuzzy }) => ({ term: fuzzy ? placeholder(term) : undefined, like: placeholder(containsPattern(term)) }));
    }
    const union = kinds.flatMap((k) => legs.map((l) => `(${legSql(k, l, p)})`)).join('\nUNION ALL\n');
    const weights = legs.map((l) => `WHEN '${l}' THEN ${LEG_WEIGHTS[l]}`).join(' ');
    const sql = `WITH legs AS (
         ${union}
       ), fused AS (
         SELECT kind, id, sum((CASE leg ${weights} END) / (${RRF_K} + rnk)) AS score, array_agg(DISTINCT leg) AS legs,
                bool_or(leg IN (${WHOLE_QUERY_LEGS.map((l) => `'${l}'`).join(', ')})) AS whole
         FROM legs GROUP BY kind, id
       )
       SELECT f.kind, f.id::text AS id, f.score::float8 AS score, f.legs,
              c.id AS conversation_id, c.session_key, c.agent,
              COALESCE(m.role, 'summary') AS role, COALESCE(m.content, s.content) AS content,
              COALESCE(m.created_at, s.created_at) AS at, m.seq, s.from_seq, s.to_seq, s.model
       FROM fused f
       LEFT JOIN memory_messages m ON f.kind = 'message' AND m.id = f.id
       LEFT JOIN memory_summaries s ON f.kind = 'summary' AND s.id = f.id
       JOIN memory_conversations c ON c.id = COALESCE(m.conversation_id, s.conversation_id)
       ORDER BY f.whole DESC, f.score DESC, at DESC, f.id DESC
       LIMIT $4`;
    // Planner settings, for this transaction only. pg_trgm's operators are priced like an
    // equality, so on small tables the planner scans every row running word_similarity on each (260 ms
    // at 10k messages) instead of the trigram index (15 ms); scans stay possible where no index
    // applies. And a word-similarity threshold of 0.7 (default 0.6) keeps typos of a name (one
    // letter of 14 scores 0.72) while the index no longer hands back every row sharing a common
    // half of it ("…Snapshot…": 1,657 rechecks and 56 ms at 100k messages, against 1 and 0.3 ms).
    // An HNSW scan keeps going past rows the agent filter drops (relaxed order: the leg re-ranks by
    // distance) and looks at as many candidates as the leg asks for.
    const hnsw = p.vector?.store.index === 'hnsw';
    const rows = (await this.deps.dataSource.transaction(async (m) => {
      await m.query(
        `SELECT set_config('enable_seqscan', 'off', true), set_config('pg_trgm.word_similarity_threshold', $1, true)${
          hnsw ? ", set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', $2, true)" : ''
        }`,
        hnsw ? [String(WORD_SIMILARITY_THRESHOLD), String(hnswEfSearch(params[2] as number))] : [String(WORD_SIMILARITY_THRESHOLD)],
      );
      return m.query(prefix + sql, params);
    })) as unknown[];
    return { query, rows };
  }

  /**
   * The query's embedding in HYBRID mode. A failing endpoint makes this search lexical, and the mode
   * LEXICAL until a later search finds it answering again (see SearchModeState).
   */
  private async queryVector(query: string): Promise<number[] | undefined> {
    if (!this.embeddings || !this.state.shouldEmbedQuery()) return undefined;
    try {
      const [vector] = await this.embeddings.embed([query]);
      if (this.state.queryEmbedded()) {
        this.deps.log.info({ endpoint: this.embeddings.endpoint }, 'the embeddings endpoint answers again; memory search is hybrid');
        this.onEmbeddingsRecovered();
      }
      return vector;
    } catch (err) {
      this.state.queryEmbeddingFailed(err as Error);
      this.deps.log.warn({ err }, 'embedding the search query failed; memory search is lexical until the endpoint answers');
      return undefined;
    }
  }
}
