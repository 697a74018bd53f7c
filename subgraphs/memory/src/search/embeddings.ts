import { MeshError } from '@keelson/schema';
import { z } from 'zod';
import type { EmbeddingsSettings } from '../settings';

const responseSchema = z.object({
  data: z.array(z.object({ index: z.number().int().min(0), embedding: z.array(z.number()).min(1) })),
});

/** The endpoint a base URL names: `<base>/embeddings`, unless it already ends in `/embeddings`. */
export function embeddingsEndpoint(url: string): string {
  const base = url.replace(/\/+$/, '');
  return base.endsWith('/embeddings') ? base : `${base}/embeddings`;
}

/**
 * A client of the OpenAI-compatible embeddings API (`POST /v1/embeddings` with `{ model, input }`),
 * as served by OpenAI, vLLM, llama.cpp, Ollama and the mesh's own model server. Failures are
 * UPSTREAM_FAILED naming the endpoint and what it answered.
 */
export class EmbeddingsClient {
  constructor(private readonly settings: EmbeddingsSettings) {}

  get model(): string {
    return this.settings.model;
  }

  /** The endpoint requests go to. */
  get endpoint(): string {
    return embeddingsEndpoint(this.settings.url);
  }

  /** One vector per input, in input order, all of one length (`dimensions` when configured). */
  async embed(inputs: readonly string[], signal?: AbortSignal): Promise<number[][]> {
    if (!inputs.length) return [];
    const endpoint = embeddingsEndpoint(this.settings.url);
    const timeout = AbortSignal.timeout(this.settings.timeoutMs);
    let res: Response;
    try {
      res = await fetch(endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(this.settings.apiKey ? { authorization: `Bearer ${this.settings.apiKey}` } : {}),
        },
        body: JSON.stringify({ model: this.settings.model, input: inputs, ...(this.settings.dimensions ? { dimensions: this.settings.dimensions } : {}) }),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (err) {
      const why = timeout.aborted ? `no answer within ${this.settings.timeoutMs} ms` : (err as Error).message;
      throw new MeshError('UPSTREAM_FAILED', `embeddings endpoint ${endpoint} failed: ${why}`);
    }
    const text = await res.text();
    if (!res.ok) {
      throw new MeshError('UPSTREAM_FAILED', `embeddings endpoint ${endpoint} answered ${res.status}: ${text.slice(0, 300)}`);
    }
    let parsed: z.infer<typeof responseSchema>;
    try {
      parsed = responseSchema.parse(JSON.parse(text));
    } catch {
      throw new MeshError('UPSTREAM_FAILED', `embeddings endpoint ${endpoint} answered something other than { data: [{ index, embedding }] }`);
    }
    if (parsed.data.length !== inputs.length) {
      throw new MeshError('UPSTREAM_FAILED', `embeddings endpoint ${endpoint} returned ${parsed.data.length} vectors for ${inputs.length} inputs`);
    }
    const vectors = [...parsed.data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
    const expected = this.settings.dimensions ?? vectors[0]!.length;
    const odd = vectors.find((v) => v.length !== expected);
    if (odd) {
      const wanted = this.settings.dimensions ? `${expected} (KEELSON_EMBEDDINGS_DIMENSIONS)` : `${expected} (the length of its first vector)`;
      throw new MeshError('UPSTREAM_FAILED', `embeddings endpoint ${endpoint} returned a vector of ${odd.length} dimensions, expected ${wanted}`);
    }
    return vectors;
  }
}

/** pgvector's text form of a vector: `[0.1,0.2,…]`. */
export function toVectorLiteral(v: readonly number[]): string {
  return `[${v.join(',')}]`;
}
