import type { TiktokenBPE } from 'js-tiktoken/lite' with { 'resolution-mode': 'import' };
import type { ModelServer } from '@keelson/model-server';
import { corpus, corpusConversation } from '../../test/support/corpus';
import { errorCodes, expectData, startMemoryHarness, type MemoryHarness } from '../../test/support/memoryHarness';
import { expectPgvectorAsDeclared, pgvectorDeclaredAbsent, startEmbeddings, testServerHasPgvector } from '../../test/support/pgvector';

jest.setTimeout(60_000);

// An independent tokenizer instance: budgets are checked with the same encoding, not the same code.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { Tiktoken } = require('js-tiktoken/lite') as typeof import('js-tiktoken/lite', { with: { 'resolution-mode': 'import' } });
// eslint-disable-next-line @typescript-eslint/no-require-imports
const cl100k = new Tiktoken(require('js-tiktoken/ranks/cl100k_base') as TiktokenBPE);
const tokens = (text: string) => cl100k.encode(text, [], []).length;

const CONVERSATIONS = 50;
const PER_CONVERSATION = 200;
const PHRASE = 'the quokka ledger drifted after the zeppelin rollout';
const PHRASE_CONV = 17;
const DECOY_CONV = 18;
const IDENT_CONV = 23;

interface Hit {
  messageId: string;
  kind: 'MESSAGE' | 'SUMMARY';
  role: string;
  snippet: string;
  content: string;
  score: number;
  matchedBy: string[];
  conversation: { sessionKey: string; agent: string };
}
const HIT = 'messageId kind role snippet content score matchedBy conversation { sessionKey agent }';
const SEARCH = `query ($query: String!, $agent: String, $limit: Int, $scope: MemoryScope) {
  memorySearch(query: $query, agent: $agent, limit: $limit, scope: $scope) { ${HIT} }
}`;
const CONTEXT = `query ($query: String!, $agent: String!, $maxTokens: Int) {
  contextForTurn(query: $query, agent: $agent, maxTokens: $maxTokens) { text tokens maxTokens tokenizer sources { messageId kind matchedBy } }
}`;

/** The index scans of a plan (`explain()`'s JSON): each index with its condition. */
/** The tables a plan reads (by scan or index scan). */
function relations(plan: unknown): string[] {
  const found = new Set<string>();
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      const n = node as Record<string, unknown>;
      if (typeof n['Relation Name'] === 'string') found.add(n['Relation Name']);
      Object.values(n).forEach(walk);
    }
  };
  walk(plan);
  return [...found];
}

function indexScans(plan: unknown): { index: string; cond: string }[] {
  const found: { index: string; cond: string }[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      const n = node as Record<string, unknown>;
      if (typeof n['Index Name'] === 'string') found.push({ index: n['Index Name'], cond: String(n['Index Cond'] ?? '') });
      Object.values(n).forEach(walk);
    }
  };
  walk(plan);
  return found;
}

/**
 * The same specs in both modes: lexical (no embeddings endpoint, so the extension is never created)
 * and hybrid (pgvector and the local model server). Hybrid adds vector neighbours to every result;
 * matches of the whole query stay first, so what lexical finds first, hybrid finds first too.
 */
describe.each([
  { mode: 'LEXICAL', title: 'lexical: no embeddings endpoint' },
  { mode: 'HYBRID', title: pgvectorDeclaredAbsent ? 'hybrid configured, pgvector absent: the lexical fallback' : 'hybrid: pgvector + the local model server' },
] as const)('memory at 10,000 messages across 50 conversations ($title)', ({ mode }) => {
  let h: MemoryHarness;
  let models: ModelServer | undefined;
  let phraseId: string;
  let identId: string;
  let appendMs: number;
  const hybrid = mode === 'HYBRID' && !pgvectorDeclaredAbsent;

  beforeAll(async () => {
    if (mode === 'HYBRID') {
      await expectPgvectorAsDeclared();
      const embeddings = await startEmbeddings();
      models = embeddings.models;
      h = await startMemoryHarness({ settings: { embeddings: embeddings.settings } });
    } else {
      h = await startMemoryHarness();
    }
    const entries = corpus({ conversations: CONVERSATIONS, messagesPerConversation: PER_CONVERSATION, seed: 42 });
    // Plant three messages (replacing corpus ones, so the total stays 10,000), old enough that recency cannot carry them.
    const at = (conv: number, n: number) => entries[conv * PER_CONVERSATION + n]!;
    at(PHRASE_CONV, 100).content = `Root cause found: ${PHRASE}, so I pinned the ledger epoch before replaying the journal.`;
    at(DECOY_CONV, 40).content = `Same symptom in staging: ${PHRASE} there too, but nobody replays that journal.`;
    at(IDENT_CONV, 61).content = 'Renamed reconcileQuokkaSnapshots in src/billing/quokkaReconciler.ts and moved its callers to the new batch API.';
    const started = performance.now();
    const results = await h.running.services.memory.appendMany(entries);
    appendMs = performance.now() - started;
    console.log(`appended 10,000 messages in ${Math.round(appendMs)} ms`);
    phraseId = results[PHRASE_CONV * PER_CONVERSATION + 100]!.id;
    identId = results[IDENT_CONV * PER_CONVERSATION + 61]!.id;
    // A summary of the first 50 messages of the phrase conversation, inserted as compaction will.
    await h.running.services.summaries.save({
      conversationId: results[PHRASE_CONV * PER_CONVERSATION]!.conversationId,
      fromSeq: 1,
      toSeq: 50,
      content: 'Summary: the team chased the zeppelin rollout regression and the quokka ledger epochs; fixed by pinning epochs.',
      model: 'test-model',
    });
    // Hybrid: every message and the summary have their vector before anything is searched.
    await h.running.services.indexer?.idle();
    // The steady state autovacuum keeps: statistics current and the GIN pending lists merged.
    await h.sql('VACUUM ANALYZE memory_messages');
    await h.sql('VACUUM ANALYZE memory_summaries');
    await h.sql('ANALYZE memory_conversations');
    if (hybrid) await h.sql('VACUUM ANALYZE memory_embeddings');
    // Embedding 10,001 items through the local model server is the slow part; on a loaded 2-core
    // machine it can take over a minute (CI saw the 60 s default lapse while jest ran two files).
  }, 240_000);
  afterAll(async () => {
    await h?.close();
    await models?.stop();
  });

  it('stores them all in order with multi-row inserts, in a few seconds', async () => {
    const [row] = await h.sql<{ messages: string; conversations: string; gaps: string }>(
      `SELECT (SELECT count(*) FROM memory_messages) AS messages, (SELECT count(*) FROM memory_conversations) AS conversations,
              (SELECT count(*) FROM memory_conversations c WHERE c.last_seq <> (SELECT count(*) FROM memory_messages m WHERE m.conversation_id = c.id)) AS gaps`,
    );
    expect(row).toEqual({ messages: '10000', conversations: '50', gaps: '0' });
    expect(appendMs).toBeLessThan(15_000);
    // Hybrid: every message and the summary got exactly one vector; lexical: the table does not exist.
    const [table] = await h.sql<{ t: string | null }>("SELECT to_regclass('memory_embeddings')::text AS t");
    const vectors = table!.t ? (await h.sql<{ n: string }>('SELECT count(DISTINCT (item_kind, item_id))::text AS n FROM memory_embeddings'))[0] : { n: null };
    expect(vectors!.n).toBe(hybrid ? '10001' : null);
  });

  it('finds a planted phrase by full text, first, for its agent only', async () => {
    const agent = corpusConversation(PHRASE_CONV).agent;
    const { memorySearch } = expectData(await h.gql<{ memorySearch: Hit[] }>(SEARCH, { query: 'quokka ledger drifted', agent, scope: 'MESSAGES' }));
    expect(memorySearch[0]).toMatchObject({ messageId: phraseId, kind: 'MESSAGE', conversation: { agent } });
    expect(memorySearch[0]!.matchedBy).toContain('FULL_TEXT');
    expect(memorySearch[0]!.snippet).toContain(PHRASE);
    expect(memorySearch.every((hit) => hit.conversation.agent === agent)).toBe(true);
  });

  it('finds the same phrase under every agent without a filter, and only the asked agent with one, first', async () => {
    // Lexical matches come first; in hybrid mode vector neighbours follow them.
    const lexical = (hits: Hit[]) => hits.filter((hit) => hit.matchedBy.includes('FULL_TEXT'));
    const all = expectData(await h.gql<{ memorySearch: Hit[] }>(SEARCH, { query: `"${PHRASE}"`, scope: 'MESSAGES' })).memorySearch;
    expect(new Set(lexical(all).map((hit) => hit.conversation.sessionKey))).toEqual(
      new Set([corpusConversation(PHRASE_CONV).sessionId, corpusConversation(DECOY_CONV).sessionId]),
    );
    expect(all.slice(0, 2)).toEqual(lexical(all));
    const decoyAgent = corpusConversation(DECOY_CONV).agent;
    const only = expectData(await h.gql<{ memorySearch: Hit[] }>(SEARCH, { query: `"${PHRASE}"`, agent: decoyAgent })).memorySearch;
    expect(lexical(only).map((hit) => hit.conversation.sessionKey)).toEqual([corpusConversation(DECOY_CONV).sessionId]);
    expect(only[0]).toEqual(lexical(only)[0]);
    expect(only.every((hit) => hit.conversation.agent === decoyAgent)).toBe(true);
    if (!hybrid) expect(all.length + only.length).toBe(3);
  });

  it('filters messages by agent inside the full-text indexes, not after a join to the conversations', async () => {
    const agent = corpusConversation(PHRASE_CONV).agent;
    // Both full-text legs (all terms, any term) read an index whose condition names the agent; no leg
    // reads the conversations: only the read of the hits the search returns does.
    const plans = await h.running.services.search.explain({ query: 'flaky router', agent, scope: 'MESSAGES' });
    const legs = plans.filter((p) => p.statement !== 'items');
    expect(legs.map((p) => p.statement)).toEqual(['fts', 'fts_any', ...(hybrid ? ['vec'] : [])]);
    const filtered = indexScans(legs);
    const fullText = filtered.filter((s) => /^memory_messages_(fts|created|agent_)/.test(s.index));
    expect(fullText).toHaveLength(2);
    for (const scan of fullText) expect(scan).toEqual({ index: expect.stringMatching(/^memory_messages_agent_(fts|created)$/), cond: expect.stringContaining(`agent = '${agent}'`) });
    expect(relations(legs)).not.toContain('memory_conversations');
    expect(relations(plans.filter((p) => p.statement === 'items'))).toEqual(expect.arrayContaining(['memory_messages', 'memory_conversations']));
    // Without an agent the same GIN answers the tsquery alone.
    const all = indexScans(await h.running.services.search.explain({ query: 'quokka ledger drifted', scope: 'MESSAGES' }));
    expect(all.find((s) => s.index === 'memory_messages_agent_fts')?.cond).toMatch(/^\(content_tsv @@ /);
  });

  it('finds an identifier fragment and a path fragment by trigram similarity, where full text cannot', async () => {
    for (const query of ['QuokkaSnapshot', 'billing/quokkaRecon', 'quokkaReconciler.ts']) {
      const { memorySearch } = expectData(await h.gql<{ memorySearch: Hit[] }>(SEARCH, { query, limit: 5 }));
      // Lexically by trigram alone (a vector neighbour of the fragment may be it too, or may not).
      expect({ query, first: memorySearch[0]?.messageId, matchedBy: memorySearch[0]?.matchedBy.filter((m) => m !== 'VECTOR') }).toEqual({
        query,
        first: identId,
        matchedBy: ['TRIGRAM'],
      });
    }
    // An identifier named inside a sentence is looked up by trigram too.
    const inSentence = expectData(
      await h.gql<{ memorySearch: Hit[] }>(SEARCH, { query: 'where did we rename QuokkaSnapshots again?', limit: 5 }),
    ).memorySearch;
    expect(inSentence[0]?.messageId).toBe(identId);
    // A misspelt identifier still matches by similarity.
    const fuzzy = expectData(await h.gql<{ memorySearch: Hit[] }>(SEARCH, { query: 'reconcileQuokaSnapshots', limit: 5 })).memorySearch;
    expect(fuzzy[0]?.messageId).toBe(identId);
  });

  it('searches summaries, messages or both as scope says', async () => {
    const query = 'zeppelin rollout';
    const bySCope = async (scope: string) =>
      expectData(await h.gql<{ memorySearch: Hit[] }>(SEARCH, { query, scope, limit: 20 })).memorySearch.map((hit) => hit.kind);
    const summaries = await bySCope('SUMMARIES');
    expect(summaries).toEqual(['SUMMARY']);
    expect(new Set(await bySCope('MESSAGES'))).toEqual(new Set(['MESSAGE']));
    expect(new Set(await bySCope('BOTH'))).toEqual(new Set(['MESSAGE', 'SUMMARY']));
    const { memorySearch } = expectData(
      await h.gql<{ memorySearch: (Hit & { summary: { fromSeq: number; toSeq: number; model: string } })[] }>(
        `{ memorySearch(query: "quokka ledger epochs", scope: SUMMARIES) { kind role summary { fromSeq toSeq model } } }`,
      ),
    );
    expect(memorySearch[0]).toEqual({ kind: 'SUMMARY', role: 'summary', summary: { fromSeq: 1, toSeq: 50, model: 'test-model' } });
  });

  it('reports the mode it searches in, and why', async () => {
    const { memorySearchMode } = expectData(
      await h.gql<{ memorySearchMode: Record<string, unknown> }>('{ memorySearchMode { mode vectorExtensionAvailable embeddingsConfigured reason } }'),
    );
    const available = await testServerHasPgvector();
    const [extension] = await h.sql<{ n: string }>("SELECT count(*) AS n FROM pg_extension WHERE extname = 'vector'");
    if (hybrid) {
      expect(memorySearchMode).toMatchObject({ mode: 'HYBRID', vectorExtensionAvailable: true, embeddingsConfigured: true });
      expect(memorySearchMode.reason).toMatch(/^hybrid: full text \+ trigram \+ pgvector/);
      expect(extension!.n).toBe('1');
    } else {
      expect(memorySearchMode).toMatchObject({ mode: 'LEXICAL', vectorExtensionAvailable: available, embeddingsConfigured: mode === 'HYBRID' });
      expect(memorySearchMode.reason).toMatch(mode === 'HYBRID' ? /^lexical: pgvector is not installed/ : /^lexical: pgvector is (available|not installed).*no embeddings endpoint/);
      // Lexical mode creates nothing: this database never got the extension.
      expect(extension!.n).toBe('0');
    }
  });

  it('rejects bad search arguments with BAD_USER_INPUT naming the field', async () => {
    const empty = await h.gql(SEARCH, { query: '   ' });
    expect(errorCodes(empty)).toEqual(['BAD_USER_INPUT']);
    expect(empty.errors![0]!.message).toMatch(/query/);
    expect(errorCodes(await h.gql(SEARCH, { query: 'x', limit: 1000 }))).toEqual(['BAD_USER_INPUT']);
  });

  it.each([100, 1_000, 4_000])('builds a context within %i tokens by the tokenizer, including the planted item', async (maxTokens) => {
    const agent = corpusConversation(PHRASE_CONV).agent;
    const { contextForTurn } = expectData(
      await h.gql<{ contextForTurn: { text: string; tokens: number; maxTokens: number; tokenizer: string; sources: { messageId: string }[] } }>(
        CONTEXT,
        { query: 'Why did the quokka ledger drift after the zeppelin rollout?', agent, maxTokens },
      ),
    );
    expect(tokens(contextForTurn.text)).toBe(contextForTurn.tokens);
    expect(contextForTurn.tokens).toBeLessThanOrEqual(maxTokens);
    expect(contextForTurn).toMatchObject({ maxTokens, tokenizer: 'cl100k_base' });
    expect(contextForTurn.text).toContain(PHRASE);
    expect(contextForTurn.sources.map((s) => s.messageId)).toContain(phraseId);
    // Larger budgets are used, not left empty.
    if (maxTokens >= 1_000) expect(contextForTurn.tokens).toBeGreaterThan(maxTokens * 0.5);
  });

  it('fills a context with recent messages when nothing is relevant, and stays within tiny budgets', async () => {
    const agent = corpusConversation(3).agent;
    for (const maxTokens of [1, 20, 300]) {
      const { contextForTurn } = expectData(
        await h.gql<{ contextForTurn: { text: string; tokens: number; sources: { matchedBy: string[] }[] } }>(CONTEXT, {
          query: 'xylophone marmalade',
          agent,
          maxTokens,
        }),
      );
      expect(tokens(contextForTurn.text)).toBe(contextForTurn.tokens);
      expect(contextForTurn.tokens).toBeLessThanOrEqual(maxTokens);
      if (maxTokens === 300) expect(contextForTurn.sources.every((s) => s.matchedBy.includes('RECENCY'))).toBe(true);
      if (maxTokens === 300) expect(contextForTurn.sources.length).toBeGreaterThan(0);
    }
  });

  it('treats special-token markers in stored text as plain text', async () => {
    const agent = 'agent-special';
    await h.running.services.memory.append({ sessionId: 'pi:special', agent, role: 'user', content: 'literal <|endoftext|> and <|fim_prefix|> markers in a prompt' });
    const { contextForTurn } = expectData(
      await h.gql<{ contextForTurn: { text: string; tokens: number } }>(CONTEXT, { query: 'literal markers', agent, maxTokens: 200 }),
    );
    expect(contextForTurn.text).toContain('<|endoftext|>');
    expect(tokens(contextForTurn.text)).toBe(contextForTurn.tokens);
  });
});
