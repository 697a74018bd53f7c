import { parseInput } from '@keelson/kit';
import { z } from 'zod';
import type { HistoryService } from '../memory/history.service';
import { agentSchema } from '../memory/memory.input';
import type { MemoryMessage } from '../message/message.entity';
import type { Hit, SearchService } from '../search/search.service';
import { countTokens, TOKENIZER, truncateToTokens } from './tokenizer';

export const contextArgsSchema = z.object({
  query: z.string().trim().min(1, 'must not be empty').max(8_000, 'must be at most 8000 characters'),
  agent: agentSchema,
  maxTokens: z.number().int().min(1, 'must be at least 1').max(200_000, 'must be at most 200000').nullish().transform((v) => v ?? 4_000),
});
export type ContextArgs = z.input<typeof contextArgsSchema>;

export interface TurnContextResult {
  text: string;
  tokens: number;
  maxTokens: number;
  tokenizer: string;
  sources: Hit[];
}

/** Candidates asked of search and of history: enough to fill the budget (~60 tokens a message), within bounds. */
const relevantFor = (maxTokens: number) => Math.min(100, Math.max(24, Math.ceil(maxTokens / 60)));
const recentFor = (maxTokens: number) => Math.min(100, Math.max(12, Math.ceil(maxTokens / 60)));
/** Relevance dominates; recency breaks near-ties and fills what is left. */
const RELEVANCE_WEIGHT = 0.75;
const RECENCY_WEIGHT = 0.25;
/** Age at which recency has fallen to 1/e. */
const RECENCY_SCALE_MS = 3 * 24 * 3600 * 1000;
/** Below this many free tokens a shortened item is not worth including. */
const MIN_ITEM_TOKENS = 12;

const HEADER_RELEVANT = '## Relevant memory';
const HEADER_RECENT = '## Recent messages';
const SEPARATOR = '\n\n';

interface Candidate {
  hit: Hit;
  priority: number;
  section: 'relevant' | 'recent';
  /** The body actually used (full content, the snippet, or a token-truncated snippet). */
  body?: string;
}

function label(hit: Hit): string {
  const when = hit.at.toISOString().slice(0, 16).replace('T', ' ');
  const what = hit.kind === 'SUMMARY' ? `summary of #${hit.fromSeq}-${hit.toSeq}` : hit.role;
  return `[${when} ${what} ${hit.sessionKey}]`;
}

function render(c: Candidate): string {
  return `${label(c.hit)} ${c.body}`;
}

/** Sections in order: relevant by priority, then recent oldest first (the newest nearest the turn). */
function assemble(chosen: Candidate[]): string {
  const relevant = chosen.filter((c) => c.section === 'relevant').sort((a, b) => b.priority - a.priority);
  const recent = chosen.filter((c) => c.section === 'recent').sort((a, b) => a.hit.at.getTime() - b.hit.at.getTime());
  const parts: string[] = [];
  if (relevant.length) parts.push([HEADER_RELEVANT, ...relevant.map(render)].join(SEPARATOR));
  if (recent.length) parts.push([HEADER_RECENT, ...recent.map(render)].join(SEPARATOR));
  return parts.join(SEPARATOR);
}

function recentHit(m: MemoryMessage, agent: string): Hit {
  return {
    kind: 'MESSAGE',
    id: m.id,
    conversationId: m.conversationId,
    sessionKey: m.sessionKey,
    agent,
    role: m.role,
    content: m.content,
    snippet: m.content.replace(/\s+/g, ' ').trim().slice(0, 240),
    score: 0,
    at: m.createdAt,
    matchedBy: ['RECENCY'],
    seq: m.seq,
    fromSeq: null,
    toSeq: null,
    model: null,
  };
}

/**
 * contextForTurn: the memory an agent should see for a turn, within `maxTokens` by the real
 * tokenizer count of the final text (headers and separators included). Candidates are the search
 * hits for the query (relevance) and the agent's newest messages (recency), ranked by a blend of
 * both; each goes in whole, else as its snippet, else as a token-truncated snippet.
 */
export class ContextService {
  constructor(
    private readonly search: SearchService,
    private readonly history: HistoryService,
    private readonly now: () => number = Date.now,
  ) {}

  async contextForTurn(args: ContextArgs): Promise<TurnContextResult> {
    const { query, agent, maxTokens } = parseInput(contextArgsSchema, args);
    // A long turn is searched by its head: search takes at most 1000 characters.
    const [hits, recent] = await Promise.all([
      this.search.search({ query: query.slice(0, 1_000), agent, limit: relevantFor(maxTokens), scope: 'BOTH' }),
      this.history.recentMessages(agent, recentFor(maxTokens)),
    ]);

    const now = this.now();
    const recency = (at: Date) => Math.exp(-Math.max(0, now - at.getTime()) / RECENCY_SCALE_MS);
    const top = hits[0]?.score ?? 1;
    const candidates = new Map<string, Candidate>();
    for (const hit of hits) {
      candidates.set(`${hit.kind}:${hit.id}`, {
        hit,
        section: 'relevant',
        priority: RELEVANCE_WEIGHT * (hit.score / top) + RECENCY_WEIGHT * recency(hit.at),
      });
    }
    for (const m of recent) {
      const key = `MESSAGE:${m.id}`;
      const seen = candidates.get(key);
      if (seen) seen.hit = { ...seen.hit, matchedBy: [...seen.hit.matchedBy, 'RECENCY'] };
      else candidates.set(key, { hit: recentHit(m, agent), section: 'recent', priority: RECENCY_WEIGHT * recency(m.createdAt) });
    }
    const ranked = [...candidates.values()].sort((a, b) => b.priority - a.priority || b.hit.at.getTime() - a.hit.at.getTime());

    // Greedy by priority with per-part counts; the exact count of the assembled text decides below.
    const chosen: Candidate[] = [];
    const sectionsOpen = new Set<string>();
    let used = 0;
    for (const c of ranked) {
      const header = sectionsOpen.has(c.section) ? 0 : countTokens((c.section === 'relevant' ? HEADER_RELEVANT : HEADER_RECENT) + SEPARATOR) + 1;
      const overhead = header + countTokens(`${label(c.hit)} `) + countTokens(SEPARATOR);
      const free = maxTokens - used - overhead;
      if (free < MIN_ITEM_TOKENS) continue;
      const full = c.hit.content.trim();
      const fullTokens = countTokens(full);
      let body: string;
      if (fullTokens <= free) body = full;
      else if (countTokens(c.hit.snippet) <= free) body = c.hit.snippet;
      else body = `${truncateToTokens(c.hit.snippet, free - 2)}…`;
      c.body = body;
      chosen.push(c);
      sectionsOpen.add(c.section);
      used += overhead + countTokens(body);
    }

    // Token counts are not additive across boundaries: drop the least important until the whole fits.
    let text = assemble(chosen);
    let tokens = countTokens(text);
    while (tokens > maxTokens && chosen.length) {
      chosen.sort((a, b) => b.priority - a.priority).pop();
      text = assemble(chosen);
      tokens = countTokens(text);
    }
    const order = (c: Candidate) => (c.section === 'relevant' ? 0 : 1);
    const sources = [...chosen]
      .sort((a, b) => order(a) - order(b) || (order(a) === 0 ? b.priority - a.priority : a.hit.at.getTime() - b.hit.at.getTime()))
      .map((c) => c.hit);
    return { text, tokens, maxTokens, tokenizer: TOKENIZER, sources };
  }
}
