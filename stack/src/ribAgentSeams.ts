import { createAgentTurns, type AgentTurns } from '@keelson/providers';
import type { RibHost } from '@keelson/host';
import { MeshError } from '@keelson/schema';
import { serviceCaller, type Logger, type ServiceIdentity } from '@keelson/service';
import type { MemoryRecord, MemoryTools, RibContext } from '@keelson/ribs-contract';
import { z } from 'zod';

/** The seed 000 seams a rib reaches in whichever process hosts it. */
export type RibAgentSeams = Required<Pick<RibContext, 'runAgentTurn' | 'getProviders' | 'getMemory'>>;

const kinds = ['decision', 'lesson', 'work-log', 'evidence'] as const satisfies readonly MemoryRecord['kind'][];
const recallSchema = z.strictObject({
  query: z.string().trim().min(1, 'must not be empty').max(2000),
  scope: z.strictObject({ projectId: z.string().min(1).max(200).optional(), visibility: z.enum(['private', 'project', 'global']).optional() }).optional(),
  limit: z.number().int().min(1).max(50).optional(),
});
const writebackSchema = z.strictObject({
  text: z.string().trim().min(1, 'must not be empty').max(20_000),
  kind: z.enum(kinds).optional(),
  scope: recallSchema.shape.scope,
});

function parsed<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const result = schema.safeParse(value);
  if (!result.success) throw new MeshError('BAD_USER_INPUT', `${what}: ${result.error.issues.map((i) => `${i.path.join('.') || 'input'} ${i.message}`).join('; ')}`);
  return result.data;
}

/**
 * A rib's `getMemory()` over the memory subgraph's GraphQL API, as the service identity of the
 * process hosting it. Rows live in the rib's own conversation (`rib:<id>`), one message per row, the
 * row's kind as its role; writeback is evidence unless told otherwise and never instruction-grade
 * (the metadata says so). `recall` searches the rib's own rows, or every conversation when the scope
 * is `global`.
 */
export function graphqlMemoryTools(url: string, identity: ServiceIdentity, ribId: string, timeoutMs = 30_000): MemoryTools {
  const call = serviceCaller('the memory subgraph', url, { timeoutMs, identity });
  const agent = `rib:${ribId}`;
  return {
    async recall(req) {
      const r = parsed(recallSchema, req, 'recall');
      const data = await call<{ memorySearch: { messageId: string; role: string; content: string; at: string }[] }>(
        'query ($q: String!, $a: String, $l: Int) { memorySearch(query: $q, agent: $a, limit: $l, scope: MESSAGES) { messageId role content at } }',
        { q: r.query, a: r.scope?.visibility === 'global' ? null : agent, l: r.limit ?? 10 },
      );
      return data.memorySearch.map((hit) => ({
        id: hit.messageId,
        kind: (kinds as readonly string[]).includes(hit.role) ? (hit.role as MemoryRecord['kind']) : 'evidence',
        text: hit.content,
        createdAt: hit.at,
      }));
    },
    async writeback(entry) {
      const w = parsed(writebackSchema, entry, 'writeback');
      const data = await call<{ appendMemory: string }>('mutation ($e: MemoryEntryInput!) { appendMemory(entry: $e) }', {
        e: {
          sessionId: agent,
          agent,
          role: w.kind ?? 'evidence',
          content: w.text,
          channel: 'rib',
          metadata: { ribId, kind: w.kind ?? 'evidence', instructionGrade: false, review: 'pending', ...(w.scope ? { scope: w.scope } : {}) },
        },
      });
      return { id: data.appendMemory };
    },
  };
}

export interface RibAgentSeamsOptions {
  /** What providers read (KEELSON_ANTHROPIC_* / KEELSON_OPENAI_* / KEELSON_AGENT_* / KEELSON_MODEL_*). */
  env: Record<string, string | undefined>;
  /** The keelson home: the config file and the neutral cwd. */
  home: string;
  /** The rib host whose tools a turn may call, once it exists. */
  host: () => RibHost | undefined;
  /** Postgres for the usage ledger and provider sessions, once the runs domain opened it (its migrations own the tables). */
  db?: () => { query(sql: string, params?: unknown[]): Promise<unknown> } | undefined;
  /** The memory subgraph's GraphQL endpoint (a getter when it starts after the ribs). */
  memoryUrl: string | (() => string | undefined);
  /** Who this process is to the memory subgraph. */
  identity: ServiceIdentity;
  log: Logger;
}

/**
 * `runAgentTurn`, `getProviders` (the process's own provider registry and agent-turn engine, as the
 * worker has for prompt nodes) and `getMemory` (over the memory subgraph) for each rib the process
 * hosts: the ribs process gets them as the worker's ribs do.
 */
export function ribAgentSeams(opts: RibAgentSeamsOptions): { turns: AgentTurns; seams: (ribId: string) => RibAgentSeams } {
  const db = opts.db;
  const turns = createAgentTurns({
    home: opts.home,
    env: opts.env,
    host: opts.host,
    ...(db
      ? {
          db: {
            query: (sql: string, params?: unknown[]) => {
              const q = db();
              if (!q) return Promise.reject(new MeshError('SERVICE_UNAVAILABLE', 'the runs domain is not open yet'));
              return q.query(sql, params);
            },
          },
        }
      : {}),
    log: opts.log.child({ component: 'rib-agent-turns' }),
  });
  return {
    turns,
    seams: (ribId) => {
      const own = turns.seams(ribId);
      const getMemory = (): MemoryTools => {
        const url = typeof opts.memoryUrl === 'function' ? opts.memoryUrl() : opts.memoryUrl;
        if (!url) throw new MeshError('SERVICE_UNAVAILABLE', 'the memory subgraph is not up yet');
        return graphqlMemoryTools(url, opts.identity, ribId);
      };
      return { runAgentTurn: own.runAgentTurn, getProviders: own.getProviders, getMemory };
    },
  };
}
