import WebSocket from 'ws';

export type ClientSocketConstructor = new (address: string | URL, protocols?: string | string[]) => WebSocket;

export interface ClientSocketOptions {
  /** A handshake the server never answers fails after this long. */
  handshakeTimeout: number;
  /** @default true */
  perMessageDeflate?: boolean;
  /** Sees every socket created (e.g. to terminate them all on stop). */
  onCreate?: (socket: WebSocket) => void;
}

/**
 * A `webSocketImpl` for graphql-ws clients inside the mesh. graphql-ws detaches its handlers when
 * it terminates a socket; an 'error' the socket emits afterwards (a handshake aborted half-way)
 * must not become an uncaught exception that takes the process down.
 */
export function clientSocket(opts: ClientSocketOptions): ClientSocketConstructor {
  return class ClientSocket extends WebSocket {
    constructor(address: string | URL, protocols?: string | string[]) {
      super(address, protocols, { handshakeTimeout: opts.handshakeTimeout, perMessageDeflate: opts.perMessageDeflate ?? true });
      this.on('error', () => undefined);
      opts.onCreate?.(this);
    }
  };
}
