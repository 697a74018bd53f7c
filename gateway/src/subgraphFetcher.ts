import { STATUS_CODES } from 'node:http';
import type { Fetcher, FetcherHeaders, FetcherRequestInit, FetcherResponse } from '@apollo/utils.fetcher';
import { Agent, type Dispatcher } from 'undici';

/** The gateway's HTTP client for subgraph fetches, and how to let its connections go. */
export interface SubgraphFetcher {
  fetcher: Fetcher;
  close(): Promise<void>;
}

/** A subgraph URL split the way `Dispatcher.dispatch` takes it, kept per URL (there are a handful). */
interface Target {
  origin: string;
  path: string;
}

/** Header lines as undici hands them over (name, value, name, value…), read into lower-case names on first use. */
function parseRawHeaders(raw: readonly Buffer[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toString('latin1').toLowerCase();
    const value = raw[i + 1]!.toString('latin1');
    headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
  }
  return headers;
}

/** The response headers a subgraph answered with, behind the Fetch `Headers` reads Apollo makes. */
class ResponseHeaders implements FetcherHeaders {
  // Private fields: a copy made with structuredClone (the data source's in-flight sharing) carries none of them.
  #raw: readonly Buffer[];
  #parsed: Record<string, string> | undefined;

  constructor(raw: readonly Buffer[]) {
    this.#raw = raw;
  }

  get #headers(): Record<string, string> {
    return (this.#parsed ??= parseRawHeaders(this.#raw));
  }

  get(name: string): string | null {
    return this.#headers[name.toLowerCase()] ?? null;
  }

  has(name: string): boolean {
    return this.#headers[name.toLowerCase()] !== undefined;
  }

  set(name: string, value: string): void {
    this.#headers[name.toLowerCase()] = value;
  }

  append(name: string, value: string): void {
    const had = this.get(name);
    this.set(name, had === null ? value : `${had}, ${value}`);
  }

  delete(name: string): void {
    delete this.#headers[name.toLowerCase()];
  }

  *entries(): IterableIterator<[string, string]> {
    const headers = this.#headers;
    for (const name of Object.keys(headers).sort()) yield [name, headers[name]!];
  }

  *keys(): IterableIterator<string> {
    for (const [name] of this.entries()) yield name;
  }

  *values(): IterableIterator<string> {
    for (const [, value] of this.entries()) yield value;
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }
}

/** One subgraph answer, read whole, as the Fetch API response Apollo's data source reads: status, headers, body once. */
class SubgraphResponse implements FetcherResponse {
  readonly redirected = false;
  readonly headers: ResponseHeaders;
  #body: Buffer | undefined;

  constructor(
    readonly url: string,
    readonly status: number,
    rawHeaders: readonly Buffer[],
    body: Buffer,
  ) {
    this.headers = new ResponseHeaders(rawHeaders);
    this.#body = body;
  }

  get ok(): boolean {
    return this.status >= 200 && this.status < 300;
  }

  get statusText(): string {
    return STATUS_CODES[this.status] ?? '';
  }

  get bodyUsed(): boolean {
    return this.#body === undefined;
  }

  /** The body, once; as the Fetch API does, a second read fails. */
  #take(): Buffer {
    const body = this.#body;
    if (body === undefined) throw new TypeError('the body of a subgraph response was already read');
    this.#body = undefined;
    return body;
  }

  async text(): Promise<string> {
    const text = this.#take().toString('utf8');
    // As the Fetch API's text(): a UTF-8 byte order mark is not part of the text.
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text()) as unknown;
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    const body = this.#take();
    return body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength) as ArrayBuffer;
  }

  clone(): FetcherResponse {
    throw new Error('a subgraph response is read once; clone() is not supported');
  }
}

/**
 * Collects one answer for `Dispatcher.dispatch`: status, header lines and body chunks, settled when
 * the body is complete. undici's own request() wraps each body in a Readable stream, whose
 * machinery cost more than the rest of the fetch; a subgraph answer is small and read whole anyway.
 */
class AnswerCollector implements Dispatcher.DispatchHandler {
  #status = 0;
  #rawHeaders: Buffer[] = [];
  readonly #chunks: Buffer[] = [];
  #size = 0;
  #onAbort: (() => void) | undefined;

  constructor(
    private readonly url: string,
    private readonly signal: AbortSignal | undefined,
    private readonly resolve: (response: SubgraphResponse) => void,
    private readonly reject: (err: Error) => void,
  ) {}

  onConnect(abort: (err?: Error) => void): void {
    const signal = this.signal;
    if (!signal) return;
    if (signal.aborted) return abort(signal.reason as Error);
    if (this.#onAbort) signal.removeEventListener('abort', this.#onAbort);
    this.#onAbort = () => abort(signal.reason as Error);
    signal.addEventListener('abort', this.#onAbort, { once: true });
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    this.#status = statusCode;
    this.#rawHeaders = rawHeaders;
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    return true;
  }

  onComplete(): void {
    this.#release();
    const body = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks, this.#size);
    this.resolve(new SubgraphResponse(this.url, this.#status, this.#rawHeaders, body));
  }

  onError(err: Error): void {
    this.#release();
    this.reject(err);
  }

  #release(): void {
    if (this.#onAbort) this.signal?.removeEventListener('abort', this.#onAbort);
    this.#onAbort = undefined;
  }
}

/**
 * Subgraph fetches over one undici keep-alive agent, through `Dispatcher.dispatch` rather than the
 * Fetch API: Apollo reads only the status, a header or two and the body once, and the WHATWG
 * Request/Response/Headers layer cost about a fifth of the gateway's CPU per request (and
 * `Dispatcher.request`'s body stream most of what remained of the fetch). undici honours
 * the `Keep-Alive: timeout=…` a subgraph answers with (closing an idle connection a second before
 * the server would), so a request never goes out on a connection the server is closing — the
 * stale-socket reset that surfaced as "subgraph is unreachable" under load with the first fetcher.
 */
export function subgraphFetcher(): SubgraphFetcher {
  const agent = new Agent({ keepAliveTimeout: 4_000, keepAliveMaxTimeout: 60_000, connections: 256 });
  const targets = new Map<string, Target>();
  const targetOf = (url: string): Target => {
    let target = targets.get(url);
    if (!target) {
      const parsed = new URL(url);
      target = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
      targets.set(url, target);
    }
    return target;
  };
  const fetcher = (url: string, init: FetcherRequestInit = {}): Promise<FetcherResponse> => {
    const { origin, path } = targetOf(url);
    const signal = init.signal as AbortSignal | undefined;
    return new Promise<FetcherResponse>((resolve, reject) => {
      const options: Dispatcher.DispatchOptions = {
        origin,
        path,
        method: (init.method ?? 'GET') as Dispatcher.HttpMethod,
        ...(init.headers ? { headers: init.headers } : {}),
        ...(init.body !== undefined ? { body: init.body } : {}),
      };
      agent.dispatch(options, new AnswerCollector(url, signal, resolve, reject));
    });
  };
  return { fetcher, close: () => agent.close() };
}
