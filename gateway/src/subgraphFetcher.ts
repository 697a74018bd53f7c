import { STATUS_CODES, type IncomingHttpHeaders } from 'node:http';
import type { Fetcher, FetcherHeaders, FetcherRequestInit, FetcherResponse } from '@apollo/utils.fetcher';
import { Agent, type Dispatcher } from 'undici';

/** The gateway's HTTP client for subgraph fetches, and how to let its connections go. */
export interface SubgraphFetcher {
  fetcher: Fetcher;
  close(): Promise<void>;
}

/** A subgraph URL split the way `Dispatcher.request` takes it, kept per URL (there are a handful). */
interface Target {
  origin: string;
  path: string;
}

/** The response headers undici answers with (lower-case names) behind the Fetch `Headers` reads Apollo makes. */
class ResponseHeaders implements FetcherHeaders {
  // Private fields: a copy made with structuredClone (the data source's in-flight sharing) carries no stream.
  readonly #raw: IncomingHttpHeaders;

  constructor(raw: IncomingHttpHeaders) {
    this.#raw = raw;
  }

  get(name: string): string | null {
    const value = this.#raw[name.toLowerCase()];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(', ') : value;
  }

  has(name: string): boolean {
    return this.#raw[name.toLowerCase()] !== undefined;
  }

  set(name: string, value: string): void {
    this.#raw[name.toLowerCase()] = value;
  }

  append(name: string, value: string): void {
    const had = this.get(name);
    this.set(name, had === null ? value : `${had}, ${value}`);
  }

  delete(name: string): void {
    delete this.#raw[name.toLowerCase()];
  }

  *entries(): IterableIterator<[string, string]> {
    for (const name of Object.keys(this.#raw).sort()) {
      const value = this.get(name);
      if (value !== null) yield [name, value];
    }
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

/** One subgraph answer as the Fetch API response Apollo's data source reads: status, headers, body once. */
class SubgraphResponse implements FetcherResponse {
  readonly redirected = false;
  readonly headers: ResponseHeaders;
  readonly status: number;
  readonly #answer: Dispatcher.ResponseData;

  constructor(
    readonly url: string,
    answer: Dispatcher.ResponseData,
  ) {
    this.#answer = answer;
    this.status = answer.statusCode;
    this.headers = new ResponseHeaders(answer.headers);
  }

  get ok(): boolean {
    return this.status >= 200 && this.status < 300;
  }

  get statusText(): string {
    return STATUS_CODES[this.status] ?? '';
  }

  get bodyUsed(): boolean {
    return this.#answer.body.bodyUsed;
  }

  text(): Promise<string> {
    return this.#answer.body.text();
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.#answer.body.text()) as unknown;
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    return this.#answer.body.arrayBuffer();
  }

  clone(): FetcherResponse {
    throw new Error('a subgraph response is read once; clone() is not supported');
  }
}

/**
 * Subgraph fetches over one undici keep-alive agent, through `Dispatcher.request` rather than the
 * Fetch API: Apollo reads only the status, a header or two and the body once, and the WHATWG
 * Request/Response/Headers layer cost about a fifth of the gateway's CPU per request. undici honours
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
  const fetcher = async (url: string, init: FetcherRequestInit = {}): Promise<FetcherResponse> => {
    const { origin, path } = targetOf(url);
    const answer = await agent.request({
      origin,
      path,
      method: (init.method ?? 'GET') as Dispatcher.HttpMethod,
      ...(init.headers ? { headers: init.headers } : {}),
      ...(init.body !== undefined ? { body: init.body } : {}),
      ...(init.signal ? { signal: init.signal as AbortSignal } : {}),
    });
    return new SubgraphResponse(url, answer);
  };
  return { fetcher, close: () => agent.close() };
}
