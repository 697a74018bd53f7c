import { MeshError } from '@keelson/schema';
import { serviceCaller, type ServiceIdentity } from '@keelson/service';
import type { MemoryRecord, MemoryTools } from '@keelson/ribs-contract';
import { z } from 'zod';

export const memoryKinds = ['decision', 'lesson', 'work-log', 'evidence'] as const satisfies readonly MemoryRecord['kind'][];
export const memoryRecallSchema = z.strictObject({
  query: z.string().trim().min(1, 'must not be empty').max(2000),
  scope: z.strictObject({ projectId: z.string().min(1).max(200).optional(), visibility: z.enum(['private', 'project', 'global']).optional() }).optional(),
  limit: z.number().int().min(1).max(50).optional(),
});
export const memoryWritebackSchema = z.strictObject({
  text: z.string().trim().min(1, 'must not be empty').max(20_000),
  kind: z.enum(memoryKinds).optional(),
  scope: memoryRecallSchema.shape.scope,
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
      const r = parsed(memoryRecallSchema, req, 'recall');
      const data = await call<{ memorySearch: { messageId: string; role: string; content: string; at: string }[] }>(
        'query ($q: String!, $a: String, $l: Int) { memorySearch(query: $q, agent: $a, limit: $l, scope: MESSAGES) { messageId role content at } }',
        { q: r.query, a: r.scope?.visibility === 'global' ? null : agent, l: r.limit ?? 10 },
      );
      return data.memorySearch.map((hit) => ({
        id: hit.messageId,
        kind: (memoryKinds as readonly string[]).includes(hit.role) ? (hit.role as MemoryRecord['kind']) : 'evidence',
        text: hit.content,
        createdAt: hit.at,
      }));
    },
    async writeback(entry) {
      const w = parsed(memoryWritebackSchema, entry, 'writeback');
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
