import { ASSERTION_PARAM, type Caller } from '@keelson/schema';
import { clientSocket, type AssertionKey, type ClientSocketConstructor } from '@keelson/service';
import type { GraphQLFormattedError } from 'graphql';
import { createClient, type Client } from 'graphql-ws';
import type { SubgraphEndpoint } from './subgraphEndpoints';

// The upstream side of the subscription router: one graphql-ws client per client connection and
// subgraph, shared by the upstream subscriptions (feeds) that connection opened there.

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

/** One upstream graphql-ws client, shared by one client connection's subscriptions to one subgraph. */
export interface UpstreamLink {
  client: Client;
  /** Subscriptions using this link; at zero the link is shut and forgotten. */
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

/** The upstream links of one client connection, by subgraph name. */
export class UpstreamPool {
  private readonly links = new Map<string, UpstreamLink>();
  private closed = false;

  constructor(
    private readonly socketImpl: ClientSocketConstructor,
    private readonly connectTimeoutMs: number,
    /** The client connection's caller, asserted to every subgraph it reaches. */
    readonly caller: Caller,
    private readonly assertions: AssertionKey,
    /** Ends the client connection (a slow consumer). */
    readonly closeClient: (code: number, reason: string) => void,
  ) {}

  /** A link to `endpoint` and its release; throws once the client connection has closed. */
  acquire(endpoint: SubgraphEndpoint): { link: UpstreamLink; release: () => void } {
    if (this.closed) throw new Error('the client connection has closed');
    let link = this.links.get(endpoint.name);
    if (!link) {
      link = this.open(endpoint);
      this.links.set(endpoint.name, link);
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
        if (this.links.get(endpoint.name) === held) this.links.delete(endpoint.name);
        shut(held);
      },
    };
  }

  /** True once the client connection has closed: nothing new is opened on its links. */
  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * The client connection closed: links nobody uses are shut now. A link still carrying a feed that
   * other connections' subscriptions share is shut when its last user releases it; with `everything`
   * (the gateway stopping) every link is shut now.
   */
  close(everything = false): void {
    this.closed = true;
    for (const [name, link] of this.links) {
      if (link.users > 0 && !everything) continue;
      this.links.delete(name);
      shut(link);
    }
  }

  private open(endpoint: SubgraphEndpoint): UpstreamLink {
    const link = { users: 0, acked: false, everAcked: false } as UpstreamLink;
    link.client = createClient({
      url: endpoint.wsUrl,
      webSocketImpl: this.socketImpl,
      lazy: true,
      lazyCloseTimeout: 0,
      connectionParams: async () => ({ [ASSERTION_PARAM]: await this.assertions.sign(this.caller) }),
      // A lost upstream ends the subscription with SERVICE_UNAVAILABLE; the client resumes from its
      // cursor. Retrying here would hide a gap the client cannot see.
      retryAttempts: 0,
      connectionAckWaitTimeout: this.connectTimeoutMs,
      on: {
        connected: () => {
          link.acked = true;
          link.everAcked = true;
        },
        closed: () => {
          link.acked = false;
        },
      },
    });
    return link;
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
