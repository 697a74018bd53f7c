import type { ToolDefinition } from '@keelson/ribs-contract';
import { z } from 'zod';
import { errorMessage } from '../errors';
import type { DocsCatalog } from './docsCatalog';

/** The name of the host's docs tool. */
export const KEELSON_DOCS_TOOL = 'keelson_docs';

const inputSchema = z.strictObject({
  source: z.string().min(1).optional(),
  topic: z.string().min(1).optional(),
});

/**
 * `keelson_docs`: with no input it lists every docs source; with `source` it indexes that source
 * into its H1 topics; with `source` and `topic` (a title or number) it returns that one topic. So
 * an agent reads what it needs and a whole corpus never enters a turn.
 */
export function keelsonDocsTool(catalog: DocsCatalog): ToolDefinition<z.infer<typeof inputSchema>> {
  return {
    name: KEELSON_DOCS_TOOL,
    description:
      'Read the docs the installed ribs contribute. No input lists the sources; {source} lists its topics; {source, topic} returns one topic (by title or number).',
    inputSchema,
    async execute(input, ctx) {
      const reply = (content: string, isError = false) =>
        ctx.emit({ type: 'tool_result', toolUseId: '', content, ...(isError ? { isError: true } : {}) });
      const sources = catalog.list();
      if (input.source === undefined) {
        if (input.topic !== undefined) return reply('name a source with the topic', true);
        if (sources.length === 0) return reply('No docs sources are installed.');
        return reply(['Docs sources:', ...sources.map((s) => `- ${s.id}: ${s.title} — ${s.summary}`)].join('\n'));
      }
      const source = sources.find((s) => s.id === input.source);
      if (!source) return reply(`unknown source '${input.source}'; sources: ${sources.map((s) => s.id).join(', ') || 'none'}`, true);
      try {
        const topics = (await catalog.topics(source.id, ctx.abortSignal)) ?? [];
        if (ctx.abortSignal.aborted) return;
        if (input.topic === undefined) {
          return reply([`${source.title} (${source.id}) topics:`, ...topics.map((t, i) => `${i + 1}. ${t.title}`)].join('\n'));
        }
        const topic = await catalog.topic(source.id, input.topic, ctx.abortSignal);
        if (!topic) return reply(`no topic '${input.topic}' in ${source.id}; topics: ${topics.map((t) => t.title).join(', ')}`, true);
        return reply(topic.text);
      } catch (err) {
        return reply(errorMessage(err), true);
      }
    },
  };
}
