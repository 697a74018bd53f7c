import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { versionAtLeast, type StandinActor, type StandinApi } from './api';
import { HttpError } from './http';
import type { EventRow } from './store';

/** Close codes SWARM.md §1.4 records. */
export const CLOSE_RESYNC = 4001;
export const CLOSE_POLICY = 1008;
export const RESYNC_REASON = 'realtime replay limit exceeded; resync required';
/** Replay holds at most this many events before the server asks for a resync. */
export const REPLAY_CAP = 5000;
const BEARER_PROTOCOL = 'clickclack.bearer.';

interface Connection {
  socket: WebSocket;
  actor: StandinActor;
  workspaceId: string;
  /** Live events at or before this cursor were already replayed. */
  lastCursor: string;
}

/**
 * `GET /api/realtime/ws`: authenticates by `Authorization: Bearer` or the `clickclack.bearer.<token>`
 * subprotocol (echoed back), replays the durable events after `after_cursor` up to the tail captured
 * at connect (all of them without a cursor), then forwards live events, rechecking membership per
 * event. An unknown cursor or a replay over 5,000 events closes 4001; a revoked token (from 0.4.0)
 * or a deleted bot closes 1008.
 */
export class RealtimeHub {
  private readonly wss = new WebSocketServer({
    noServer: true,
    handleProtocols: (protocols) => [...protocols].find((p) => p.startsWith(BEARER_PROTOCOL)) ?? false,
  });
  private readonly connections = new Set<Connection>();

  constructor(private readonly api: StandinApi) {
    api.attachRealtime({
      published: (event) => this.forward(event),
      liveOnly: (event) => {
        for (const c of this.connections) if (c.workspaceId === event.workspace_id && c.actor.user.id !== (event.payload as { bot_id?: string }).bot_id) c.socket.send(JSON.stringify(event));
      },
      tokenRevoked: (tokenId) => {
        if (!versionAtLeast(api.options.version, '0.4.0')) return;
        for (const c of this.connections) if (c.actor.tokenId === tokenId) c.socket.close(CLOSE_POLICY, 'bot token revoked');
      },
      botRemoved: (botId) => {
        for (const c of this.connections) if (c.actor.user.id === botId) c.socket.close(CLOSE_POLICY, 'bot removed');
      },
    });
  }

  /** Handles an HTTP upgrade; anything but the realtime path is refused. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://standin');
    const refuse = (status: number, message: string) => {
      const body = JSON.stringify({ error: message });
      socket.end(`HTTP/1.1 ${status} ${status === 401 ? 'Unauthorized' : status === 403 ? 'Forbidden' : status === 404 ? 'Not Found' : 'Bad Request'}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    };
    if (url.pathname !== '/api/realtime/ws') return refuse(404, 'not found');
    let actor: StandinActor;
    let workspaceId: string;
    try {
      const offered = String(req.headers['sec-websocket-protocol'] ?? '')
        .split(',')
        .map((p) => p.trim())
        .find((p) => p.startsWith(BEARER_PROTOCOL));
      actor = this.api.actor(req, offered ? offered.slice(BEARER_PROTOCOL.length) : undefined);
      this.api.need(actor, 'realtime:read');
      workspaceId = url.searchParams.get('workspace_id') ?? '';
      if (!workspaceId) throw new HttpError(400, 'workspace_id is required');
      this.api.membership(actor, workspaceId);
    } catch (err) {
      if (err instanceof HttpError) return refuse(err.status, err.message);
      throw err;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.open(ws, actor, workspaceId, url.searchParams.get('after_cursor')));
  }

  private open(socket: WebSocket, actor: StandinActor, workspaceId: string, after: string | null): void {
    const visible = this.api.visibleEvents(actor, workspaceId);
    const tail = visible.at(-1)?.cursor ?? '';
    if (after) {
      const known = this.api.store.eventPosition(after) !== undefined && visible.some((e) => e.cursor === after);
      if (!known || after > tail) {
        socket.close(CLOSE_RESYNC, RESYNC_REASON);
        return;
      }
    }
    const backlog = visible.filter((e) => (!after || e.cursor > after) && e.cursor <= tail);
    for (const event of backlog.slice(0, REPLAY_CAP)) socket.send(JSON.stringify(this.api.eventView(event)));
    if (backlog.length > REPLAY_CAP) {
      socket.close(CLOSE_RESYNC, RESYNC_REASON);
      return;
    }
    const connection: Connection = { socket, actor, workspaceId, lastCursor: backlog.at(-1)?.cursor ?? after ?? tail };
    this.connections.add(connection);
    socket.on('close', () => this.connections.delete(connection));
    socket.on('error', () => this.connections.delete(connection));
  }

  private forward(event: EventRow): void {
    for (const c of this.connections) {
      if (c.workspaceId !== event.workspace_id || event.cursor <= c.lastCursor) continue;
      if (!this.api.isMember(c.actor.user.id, c.workspaceId)) {
        c.socket.close(CLOSE_POLICY, 'membership removed');
        continue;
      }
      c.lastCursor = event.cursor;
      c.socket.send(JSON.stringify(this.api.eventView(event)));
    }
  }

  /** Closes every socket (server shutdown). */
  close(): void {
    for (const c of this.connections) c.socket.terminate();
    this.connections.clear();
    this.wss.close();
  }
}
