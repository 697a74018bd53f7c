import { ASSERTION_PARAM, type Caller } from '@keelson/schema';
import { clientSocket, type AssertionKey, type ClientSocketConstructor } from '@keelson/service';
import type { GraphQLFormattedError } from 'graphql';
import { createClient, type Client } from 'graphql-ws';
import type { SubgraphEndpoint } from './subgraphEndpoints';

// The upstream side of the subscription router: one graphql-ws client (a link) per caller and
// subgraph, shared by the upstream subscriptions (feeds) of every client connection of that caller:
// 10,000 client sockets of 200 API tokens hold 200 upstream sockets, not 10,000.

/** GraphQL errors a subgraph answered a subscribe with (its `error` message), relayed as they are. */
export class UpstreamErrors extends Error {
  constructor(readonly errors: readonly GraphQLFormattedError[]) {
    super(errors.map((e) => e.message).join('; ') || 'the subgraph rejected the subscription');
    this.name = 'UpstreamErrors';
  }
}

export function upstreamSocket(handshakeTimeout: number): ClientSocketConstructor {
  return clientSocket({ handshakeTimeout, perMessageDeflate: false });
}

/** One upstream graphql-ws client, shared by every subscription of one caller to one subgraph. */
export interface UpstreamLink {
  client: Client;
  /** Feeds using this link; at zero the link is shut and forgotten. */
  users: number;
  /** True while the socket is acknowledged; decides how a link is shut. */
  acked: boolean;
  /** True once any socket of this link was acknowledged: a later failure is "lost", not "unreachable". */
  everAcked: boolean;
}

function shut(link: UpstreamLink): void {
  void Promise.resolve(link.client.dispose()).catch(() => undefined);
  // dispose() waits for a pending handshake to finish; terminate() ends it now (close 4499).
  if (!link.acked) link.client.terminate();
}

/**
 * Which subscriptions may share a link: to the same subgraph (name and address), for the same caller
 * — every field of it, as the assertion the link's `connection_init` carries is signed from it
 * (subject, kind, token, scopes, and whatever else a caller may hold). Two callers never share one.
 */
export function linkKey(endpoint: SubgraphEndpoint, caller: Caller): string {
  const fields = Object.entries(caller).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([endpoint.name, endpoint.wsUrl, fields]);
}

/**
 * The gateway's upstream links, one per caller and subgraph. A link opens with its first feed and is
 * shut when its last feed releases it; a link whose socket was lost or never acknowledged is forgotten
 * at once, so the next feed opens a fresh one while the feeds on the old one end with its failure.
 */
export class UpstreamPool {
  private readonly links = new Map<string, UpstreamLink>();
  private closed = false;

  constructor(
    private readonly socketImpl: ClientSocketConstructor,
    private readonly connectTimeoutMs: number,
    private readonly assertions: AssertionKey,
  ) {}

  /** The links of one client connection's caller. */
  connection(caller: Caller): ConnectionLinks {
    return new ConnectionLinks(this, caller);
  }

  /** A link to `endpoint` for `caller` and its release; throws once the pool has closed. */
  acquire(endpoint: SubgraphEndpoint, caller: Caller): { link: UpstreamLink; release: () => void } {
    if (this.closed) throw new Error('the gateway is stopping');
    const key = linkKey(endpoint, caller);
    let link = this.links.get(key);
    if (!link) {
      link = this.open(endpoint, caller, key);
      this.links.set(key, link);
    }
    const held = link;
    held.users += 1;
    let released = false;
    return {
      link: held,
      release: () => {
        if (released) return;
        released = true;
        held.users -= 1;
        if (held.users > 0) return;
        if (this.links.get(key) === held) this.links.delete(key);
        shut(held);
      },
    };
  }

  /** Links open now (in use, or handshaking). */
  get size(): number {
    return this.links.size;
  }

  /** The gateway is stopping: every link is shut now, and none opens again. */
  close(): void {
    this.closed = true;
    for (const link of this.links.values()) shut(link);
    this.links.clear();
  }

  private open(endpoint: SubgraphEndpoint, caller: Caller, key: string): UpstreamLink {
    const link = { users: 0, acked: false, everAcked: false } as UpstreamLink;
    link.client = createClient({
      url: endpoint.wsUrl,
      webSocketImpl: this.socketImpl,
      lazy: true,
      lazyCloseTimeout: 0,
      connectionParams: async () => ({ [ASSERTION_PARAM]: await this.assertions.sign(caller) }),
      // A lost upstream ends its subscriptions with SERVICE_UNAVAILABLE; each client resumes from its
      // cursor. Retrying here would hide a gap the clients cannot see.
      retryAttempts: 0,
      connectionAckWaitTimeout: this.connectTimeoutMs,
      on: {
        connected: () => {
          link.acked = true;
          link.everAcked = true;
        },
        closed: (event) => {
          link.acked = false;
          // Lost or unreachable: its feeds end with the failure, and a feed opened from now on gets a
          // link of its own. A normal closure (1000, the link going idle) leaves it to be used again.
          if ((event as { code?: unknown } | undefined)?.code !== 1000 && this.links.get(key) === link) this.links.delete(key);
        },
      },
    });
    return link;
  }
}

/**
 * One client connection's way to its caller's links. Closing it (the client connection closed)
 * releases nothing by itself — each of its subscriptions leaves its feed, and a link goes with its
 * last feed — but no feed opens on its behalf from then on.
 */
export class ConnectionLinks {
  private closed = false;

  constructor(
    private readonly pool: UpstreamPool,
    /** The client connection's caller, asserted to every subgraph it reaches. */
    readonly caller: Caller,
  ) {}

  /** A link to `endpoint` for this connection's caller and its release; throws once the connection has closed. */
  acquire(endpoint: SubgraphEndpoint): { link: UpstreamLink; release: () => void } {
    if (this.closed) throw new Error('the client connection has closed');
    return this.pool.acquire(endpoint, this.caller);
  }

  /** True once the client connection has closed: nothing new is opened for it. */
  get isClosed(): boolean {
    return this.closed;
  }

  close(): void {
    this.closed = true;
  }
}

/** A close event as `close <code>: <reason>`, an error event or error by its message. */
export function describeClose(err: unknown): string {
  if (typeof err === 'object' && err !== null) {
    const { code, reason, message } = err as { code?: unknown; reason?: unknown; message?: unknown };
    if (typeof code === 'number') return `close ${code}${reason ? `: ${String(reason)}` : ''}`;
    if (typeof message === 'string') return message;
  }
  return String(err);
}
