import { postJson } from '../test/support/http';
import { embed, startModelServer, type ModelServer } from './index';

jest.setTimeout(30_000);

let server: ModelServer;

type EmbeddingsBody = { object: string; data: Array<{ object: string; index: number; embedding: number[] | string }>; model: string; usage: { prompt_tokens: number; total_tokens: number } };

async function embeddings(body: Record<string, unknown>): Promise<EmbeddingsBody> {
  const res = await postJson(`${server.openaiBaseUrl}/embeddings`, body, { authorization: 'Bearer x' });
  expect(res.status).toBe(200);
  return (await res.json()) as EmbeddingsBody;
}

async function vectors(...texts: string[]): Promise<number[][]> {
  const body = await embeddings({ model: 'text-embedding-3-small', input: texts });
  return body.data.map((d) => d.embedding as number[]);
}

const cosine = (a: number[], b: number[]) => a.reduce((n, v, i) => n + v * b[i], 0);

beforeAll(async () => {
  server = await startModelServer({ embeddingDimensions: 64 });
});
afterAll(() => server?.stop());

describe('OpenAI Embeddings API', () => {
  it('answers a list of inputs in order, with the configured dimension and usage', async () => {
    const body = await embeddings({ model: 'text-embedding-3-small', input: ['alpha beta', 'gamma'] });
    expect(body).toEqual({
      object: 'list',
      data: [
        { object: 'embedding', index: 0, embedding: expect.any(Array) },
        { object: 'embedding', index: 1, embedding: expect.any(Array) },
      ],
      model: 'text-embedding-3-small',
      usage: { prompt_tokens: expect.any(Number), total_tokens: expect.any(Number) },
    });
    expect(body.data.map((d) => (d.embedding as number[]).length)).toEqual([64, 64]);
  });

  it('is deterministic, unit length, and the same over HTTP as in process', async () => {
    const [a, b] = await vectors('The quick brown fox', 'The quick brown fox');
    expect(a).toEqual(b);
    expect(cosine(a, a)).toBeCloseTo(1, 10);
    expect(a).toEqual(embed('The quick brown fox', 64));
  });

  it('puts texts that share words nearer than texts that share none', async () => {
    const [query, near, far] = await vectors('write the config file for the server', 'the server reads its config files', 'bananas are yellow fruit');
    expect(cosine(query, near)).toBeGreaterThan(0.3);
    expect(cosine(query, near)).toBeGreaterThan(cosine(query, far) + 0.2);
  });

  it('honours a request dimension and base64 encoding (little-endian float32, as the SDKs decode it)', async () => {
    const floats = await embeddings({ model: 'm', input: 'some text', dimensions: 16 });
    const b64 = await embeddings({ model: 'm', input: 'some text', dimensions: 16, encoding_format: 'base64' });
    const bytes = Buffer.from(b64.data[0].embedding as string, 'base64');
    const decoded = Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4));
    expect(decoded).toHaveLength(16);
    decoded.forEach((v, i) => expect(v).toBeCloseTo((floats.data[0].embedding as number[])[i], 6));
  });

  it('rejects a request without input', async () => {
    const res = await postJson(`${server.openaiBaseUrl}/embeddings`, { model: 'm' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain('body.input');
  });
});
