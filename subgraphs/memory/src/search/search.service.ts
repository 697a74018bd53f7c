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
const anyTerms = (query: string) => `NULLIF(replace(plainto_tsquery('english', ${query})::text, ' & ', ' | '), '')::tsquery`;

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

/** One statement's parameters: a value is added once, by name, and referred to by its placeholder. */
class Params {
  readonly values: unknown[] = [];
  private readonly named = new Map<string, string>();
  ref(name: string, value: unknown): string {
    let placeholder = this.named.get(name);
    if (!placeholder) {
      placeholder = `$${this.values.push(value)}`;
      this.named.set(name, placeholder);
    }
    return placeholder;
  }
}

/** What the legs of one search read. */
interface SearchInput {
  query: string;
  agent: string | null;
  /** Candidates each leg ranks. */
  perLeg: number;
  kinds: ItemKind[];
  /** Trigram-leg terms (none: no trigram leg). */
  terms: TrigramTerm[];
  /** The query's vector and the store it is compared in (the vector leg). */
  vector?: { literal: string; store: VectorStore; maxDistance: number };
}

/** One leg of the search over one table: its best `perLeg` items by one retrieval, numbered by rank. */
function legSql(kind: ItemKind, leg: Leg, input: SearchInput, p: Params): string {
  const t = TABLES[kind];
  const agentRef = p.ref('agent', input.agent);
  const perLeg = p.ref('perLeg', input.perLeg);
  const query = () => p.ref('query', input.query);
  // A message carries its conversation's agent, so the filter is a condition of the leg's index
  // (its GIN, its recency btree); summaries, a few per conversation, take it from the conversation.
  const agent = kind === 'message' ? `(${agentRef}::text IS NULL OR t.agent = ${agentRef})` : `(${agentRef}::text IS NULL OR c.agent = ${agentRef})`;
  const from = kind === 'message' ? `${t} t` : `${t} t JOIN memory_conversations c ON c.id = t.conversation_id`;
  // Each leg ranks inside a LIMITed subquery, then numbers its rows by that rank; `at` breaks ties
  // of the fused score.
  const ranked = (score: string, where: string) =>
    `SELECT '${kind}'::text AS kind, id, row_number() OVER (ORDER BY score DESC, id DESC) AS rnk, at
     FROM (SELECT t.id, ${score} AS score, t.created_at AS at FROM ${from} WHERE ${where} AND ${agent} ORDER BY score DESC, t.id DESC LIMIT ${perLeg}) x`;
  // Full text ranks the most recent matches only: a common word matches half the store, and ranking
  // every match would cost what the store's size costs. Recent is what memory prefers anyway.
  const rankedRecent = (score: (alias: string) => string, where: string) =>
    `SELECT '${kind}'::text AS kind, id, row_number() OVER (ORDER BY score DESC, id DESC) AS rnk, at
     FROM (SELECT id, ${score('w')} AS score, created_at AS at FROM (
             SELECT t.id, t.content_tsv, t.created_at FROM ${from} WHERE ${where} AND ${agent} ORDER BY t.created_at DESC LIMIT ${FULL_TEXT_WINDOW}
           ) w ORDER BY score DESC, id DESC LIMIT ${perLeg}) x`;
  switch (leg) {
    case 'fts':
      // All terms (websearch syntax: "phrases", or, -exclusions), ranked by cover density.
      return rankedRecent((a) => `ts_rank_cd(${a}.content_tsv, websearch_to_tsquery('english', ${query()}), 32)`, `t.content_tsv @@ websearch_to_tsquery('english', ${query()})`);
    case 'fts_any':
      // Any term: recall for natural-language turns where not every word appears.
      return rankedRecent((a) => `ts_rank(${a}.content_tsv, ${anyTerms(query())}, 32)`, `t.content_tsv @@ ${anyTerms(query())}`);
    case 'trgm': {
      // Identifiers and paths: a case-insensitive substring, or a fuzzy match of a term against the
      // best-matching extent of the text (pg_trgm word similarity).
      const refs = input.terms.map(({ term, fuzzy }, i) => ({
        term: fuzzy ? p.ref(`term${i}`, term) : undefined,
        like: p.ref(`like${i}`, containsPattern(term)),
      }));
      const where = refs.map(({ term, like }) => (term ? `t.content ILIKE ${like} OR t.content %> ${term}` : `t.content ILIKE ${like}`)).join(' OR ');
      const scores = refs.map(({ term, like }) => (term ? `CASE WHEN t.content ILIKE ${like} THEN 1.0 ELSE word_similarity(${term}, t.content) END` : `1.0`));
      return ranked(scores.length === 1 ? scores[0]! : `GREATEST(${scores.join(', ')})`, `(${where})`);
    }
    case 'vec': {
      // Nearest first by cosine distance. With an index, the expression and predicate are the
      // index's own, and the order is the distance alone, so the HNSW scan supplies it (continuing
      // past rows the agent filter drops); without, vectors of another length are left out.
      const v = input.vector!;
      const value = p.ref('vector', v.literal);
      const space = p.ref('space', v.store.space);
      let distance = `e.embedding <=> ${value}::vector`;
      let where = `e.model = ${space} AND e.item_kind = '${kind}' AND vector_dims(e.embedding) = vector_dims(${value}::vector)`;
      if (v.store.index === 'hnsw') {
        const indexed = indexedVector(v.store, 'e.');
        distance = `${indexed.expression} <=> ${value}::vector(${v.store.dimensions})`;
        where = indexed.predicate(kind, space);
      }
      // The floor applies to the nearest `perLeg`, not inside the scan: an index scan would
      // otherwise look through every vector for neighbours that are not there.
      return `SELECT '${kind}'::text AS kind, id, row_number() OVER (ORDER BY distance, id DESC) AS rnk, at
        FROM (SELECT t.id, ${distance} AS distance, t.created_at AS at
              FROM memory_embeddings e JOIN ${from} ON t.id = e.item_id
              WHERE ${where} AND ${agent}
              ORDER BY distance LIMIT ${perLeg}) x
        WHERE distance < ${p.ref('maxDistance', v.maxDistance)}`;
    }
  }
}

/** One leg's statement over every table of the search's scope, and the planner settings it runs under. */
interface LegStatement {
  leg: Leg;
  sql: string;
  params: unknown[];
  settings: Record<string, string>;
}

function legStatement(leg: Leg, input: SearchInput): LegStatement {
  const p = new Params();
  const sql = input.kinds.map((kind) => `(${legSql(kind, leg, input, p)})`).join('\nUNION ALL\n');
  // Planner settings, for the leg's transaction only. pg_trgm's operators are priced like an
  // equality, so on small tables the planner scans every row running word_similarity on each (260 ms
  // at 10k messages) instead of the trigram index (15 ms); scans stay possible where no index
  // applies. And a word-similarity threshold of 0.7 (default 0.6) keeps typos of a name (one
  // letter of 14 scores 0.72) while the index no longer hands back every row sharing a common
  // half of it ("…Snapshot…": 1,657 rechecks and 56 ms at 100k messages, against 1 and 0.3 ms).
  // An HNSW scan keeps going past rows the agent filter drops (relaxed order: the leg re-ranks by
  // distance) and looks at as many candidates as the leg asks for.
  const settings: Record<string, string> = { enable_seqscan: 'off' };
  if (leg === 'trgm') settings['pg_trgm.word_similarity_threshold'] = String(WORD_SIMILARITY_THRESHOLD);
  if (leg === 'vec' && input.vector?.store.index === 'hnsw') {
    settings['hnsw.iterative_scan'] = 'relaxed_order';
    settings['hnsw.ef_search'] = String(hnswEfSearch(input.perLeg));
  }
  return { leg, sql, params: p.values, settings };
}

/** A row of a leg's statement. */
interface LegRow {
  kind: ItemKind;
  /** bigint, as text. */
  id: string;
  rnk: string | number;
  at: Date;
}

/** An item fused from the legs that found it. */
interface Fused {
  kind: ItemKind;
  id: string;
  score: number;
  legs: Leg[];
  /** Found by a leg matching the whole query. */
  whole: boolean;
  at: Date;
}

/**
 * Reciprocal-rank fusion of the legs' rows: an item's score is the sum over the legs that found it
 * of the leg's weight / (K + its rank there); matches of the whole query first, then by score, ties
 * to the more recent item, then to the higher id.
 */
export function fuse(legs: { leg: Leg; rows: LegRow[] }[], limit: number): Fused[] {
  const items = new Map<string, Fused & { parts: [Leg, number][] }>();
  for (const { leg, rows } of legs) {
    for (const row of rows) {
      const key = `${row.kind}:${row.id}`;
      let item = items.get(key);
      if (!item) items.set(key, (item = { kind: row.kind, id: row.id, score: 0, legs: [], whole: false, at: row.at, parts: [] }));
      item.parts.push([leg, LEG_WEIGHTS[leg] / (RRF_K + Number(row.rnk))]);
    }
  }
  const order = Object.keys(LEG_WEIGHTS) as Leg[];
  const fused = [...items.values()].map(({ parts, ...item }) => {
    // Summed in one order of legs whatever order they answered in, so equal ranks make equal scores.
    parts.sort((a, b) => order.indexOf(a[0]) - order.indexOf(b[0]));
    return {
      ...item,
      score: parts.reduce((sum, [, part]) => sum + part, 0),
      legs: [...new Set(parts.map(([leg]) => leg))],
      whole: parts.some(([leg]) => WHOLE_QUERY_LEGS.includes(leg)),
    };
  });
  const byId = (a: string, b: string) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0);
  fused.sort((a, b) => Number(b.whole) - Number(a.whole) || b.score - a.score || b.at.getTime() - a.at.getTime() || byId(b.id, a.id) || a.kind.localeCompare(b.kind));
  return fused.slice(0, limit);
}

/** A row of the statement reading the fused items. */
interface ItemRow {
  kind: ItemKind;
  id: string;
  conversation_id: string;
  session_key: string;
  agent: string;
  role: string;
  content: string;
  seq: string | null;
  from_seq: string | null;
  to_seq: string | null;
  model: string | null;
}

/** The fused items' messages and summaries, with their conversations: $1 message ids, $2 summary ids. */
const ITEMS_SQL = `SELECT 'message'::text AS kind, m.id, c.id AS conversation_id, c.session_key, c.agent, m.role, m.content,
         m.seq, NULL::bigint AS from_seq, NULL::bigint AS to_seq, NULL::text AS model
  FROM memory_messages m JOIN memory_conversations c ON c.id = m.conversation_id WHERE m.id = ANY($1::bigint[])
  UNION ALL
  SELECT 'summary'::text, s.id, c.id, c.session_key, c.agent, 'summary', s.content, NULL::bigint, s.from_seq, s.to_seq, s.model
  FROM memory_summaries s JOIN memory_conversations c ON c.id = s.conversation_id WHERE s.id = ANY($2::bigint[])`;

/**
 * memorySearch: full-text (websearch syntax, ranked by ts_rank_cd) and trigram similarity (for
 * identifiers and paths) over messages, summaries or both, plus pgvector similarity in HYBRID mode;
 * the legs are fused by reciprocal rank, matches of the whole query first, ties going to the more
 * recent item. Each leg is one statement over every table in scope, and the legs run at once, each on
 * a connection of its own (the vector leg as soon as the query's embedding is back, which is fetched
 * meanwhile): a search takes as long as its slowest leg, not their sum. One more statement reads the
 * fused items.
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
    const { query, limit, statements } = this.prepare(args);
    const run = async (pending: Promise<LegStatement[]>) => Promise.all((await pending).map(async (st) => ({ leg: st.leg, rows: (await this.runLeg(st, '')) as LegRow[] })));
    const fused = fuse((await Promise.all(statements.map(run))).flat(), limit);
    const rows = await this.items(fused, '');
    const byKey = new Map((rows as ItemRow[]).map((r) => [`${r.kind}:${r.id}`, r]));
    return fused.flatMap((f): Hit[] => {
      // An item removed between its leg and this read is left out.
      const r = byKey.get(`${f.kind}:${f.id}`);
      if (!r) return [];
      return [
        {
          kind: f.kind === 'message' ? 'MESSAGE' : 'SUMMARY',
          id: f.id,
          conversationId: r.conversation_id,
          sessionKey: r.session_key,
          agent: r.agent,
          role: r.role,
          content: r.content,
          snippet: snippet(r.content, query),
          score: f.score,
          at: f.at,
          matchedBy: [...new Set(f.legs.map((l) => MATCH_OF_LEG[l]))],
          seq: r.seq == null ? null : Number(r.seq),
          fromSeq: r.from_seq == null ? null : Number(r.from_seq),
          toSeq: r.to_seq == null ? null : Number(r.to_seq),
          model: r.model,
        },
      ];
    });
  }

  /**
   * The plans Postgres runs a search with (`EXPLAIN (ANALYZE, FORMAT JSON)`: they are run), under the
   * same planner settings: per leg, then the read of the fused items — which index each used, for
   * tests and for finding out why a search is slow.
   */
  async explain(args: SearchArgs): Promise<{ statement: Leg | 'items'; plan: unknown }[]> {
    const { limit, statements } = this.prepare(args);
    const plans: { statement: Leg | 'items'; plan: unknown }[] = [];
    const legs: { leg: Leg; rows: LegRow[] }[] = [];
    for (const each of await Promise.all(statements)) {
      for (const st of each) {
        legs.push({ leg: st.leg, rows: (await this.runLeg(st, '')) as LegRow[] });
        plans.push({ statement: st.leg, plan: this.planOf(await this.runLeg(st, EXPLAIN)) });
      }
    }
    plans.push({ statement: 'items', plan: this.planOf(await this.items(fuse(legs, limit), EXPLAIN)) });
    return plans;
  }

  private planOf(rows: unknown[]): unknown {
    return (rows as { 'QUERY PLAN': unknown }[])[0]!['QUERY PLAN'];
  }

  /**
   * The search's leg statements: the lexical legs' at once, the vector leg's once the query's
   * embedding is back (none in LEXICAL mode, or when embedding the query failed).
   */
  private prepare(args: SearchArgs): { query: string; limit: number; statements: Promise<LegStatement[]>[] } {
    const { query, agent, limit, scope } = parseInput(searchArgsSchema, args);
    const input: SearchInput = {
      query,
      agent: agent ?? null,
      perLeg: Math.max(limit * 3, 30),
      kinds: scope === 'MESSAGES' ? ['message'] : scope === 'SUMMARIES' ? ['summary'] : ['message', 'summary'],
      terms: trigramTerms(query),
    };
    const lexical: Leg[] = input.terms.length ? ['fts', 'fts_any', 'trgm'] : ['fts', 'fts_any'];
    const vector = this.queryVector(query).then((embedded): LegStatement[] => {
      const store = this.state.store;
      if (!embedded || !store) return [];
      // Cosine distance is 1 - similarity.
      const maxDistance = 1 - (this.deps.settings.embeddings?.minSimilarity ?? 0);
      return [legStatement('vec', { ...input, vector: { literal: toVectorLiteral(embedded), store, maxDistance } })];
    });
    return { query, limit, statements: [Promise.resolve(lexical.map((leg) => legStatement(leg, input))), vector] };
  }

  /** Runs one leg's statement, behind `prefix`, in a transaction of its own under the leg's planner settings. */
  private async runLeg(st: LegStatement, prefix: string): Promise<unknown[]> {
    const names = Object.keys(st.settings);
    return (await this.deps.dataSource.transaction(async (m) => {
      await m.query(`SELECT ${names.map((name, i) => `set_config('${name}', $${i + 1}, true)`).join(', ')}`, Object.values(st.settings));
      return m.query(prefix + st.sql, st.params);
    })) as unknown[];
  }

  /** Reads the fused items, behind `prefix`. */
  private async items(fused: Fused[], prefix: string): Promise<unknown[]> {
    const ids = (kind: ItemKind) => fused.filter((f) => f.kind === kind).map((f) => f.id);
    return (await this.deps.dataSource.query(prefix + ITEMS_SQL, [ids('message'), ids('summary')])) as unknown[];
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

const EXPLAIN = 'EXPLAIN (ANALYZE, FORMAT JSON) ';
