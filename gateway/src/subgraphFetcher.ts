import type { Fetcher, FetcherResponse } from '@apollo/utils.fetcher';
import { Agent, fetch } from 'undici';

/** The gateway's HTTP client for subgraph fetches, and how to let its connections go. */
export interface SubgraphFetcher {
  fetcher: Fetcher;
  close(): Promise<void>;
}

/**
 * Subgraph fetches over one undici keep-alive pool. undici honours the `Keep-Alive: timeout=…` a
 * subgraph answers with (closing an idle connection a second before the server would), so a request
 * never goes out on a connection the server is closing — the stale-socket reset that surfaced as
 * "subgraph is unreachable" under load with the previous fetcher.
 */
export function subgraphFetcher(): SubgraphFetcher {
  const agent = new Agent({ keepAliveTimeout: 4_000, keepAliveMaxTimeout: 60_000, connections: 256 });
  return {
    fetcher: (url, init) => fetch(url, { ...init, dispatcher: agent } as Parameters<typeof fetch>[1]) as unknown as Promise<FetcherResponse>,
    close: () => agent.close(),
  };
}
