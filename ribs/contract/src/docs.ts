import { z } from 'zod';

/**
 * A documentation source a rib adds to the docs catalog: an `llms-full.txt` corpus the host fetches
 * and caches (http or https only), or inline `content`; exactly one of the two. The `keelson_docs`
 * tool lists sources, indexes one into its H1 topics and returns one topic, so a whole corpus never
 * enters a turn.
 */
export const ribDocsSourceSchema = z
  .strictObject({
    title: z.string().min(1).max(80),
    summary: z.string().min(1).max(280),
    llmsFullUrl: z.url({ protocol: /^https?$/, error: 'llmsFullUrl is an http(s) URL' }).optional(),
    content: z.string().min(1).optional(),
  })
  .refine((s) => (s.llmsFullUrl === undefined) !== (s.content === undefined), {
    message: "a docs source sets exactly one of 'llmsFullUrl' or 'content'",
  });
export type RibDocsSource = z.infer<typeof ribDocsSourceSchema>;
