import { EVENTS_CHANNEL } from '@keelson/schema';
import type { Logger } from '@keelson/service';
import { Client } from 'pg';

/** A position in the notification history a waiter compares against. */
export interface Ticket {
  readonly stream: string;
  readonly version: number;
  readonly epoch: number;
}

interface Waiter {
  stream: string;
  wake: () => void;
}

/**
 * Reads a notification's payload, `<stream>:<seq>:<type>` (`appendEvent`'s; stream names hold no
 * colon) or the older `<stream>:<seq>`, whose type is unknown. A malformed sequence reads as NaN.
 */
export function parseNotification(payload: string): { stream: string; seq: number; type: string | undefined } {
  const first = payload.indexOf(':');
  if (first < 0) return { stream: payload, seq: NaN, type: undefined };
  const second = payload.indexOf(':', first + 1);
  const seqText = second < 0 ? payload.slice(first + 1) : payload.slice(first + 1, second);
  return {
    stream: payload.slice(0, first),
    seq: /^[0-9]+$/.test(seqText) ? Number(seqText) : NaN,
    type: second < 0 ? undefined : payload.slice(second + 1),
  };
}

/** What a watcher of the LISTEN connection hears (e.g. the gateway's entity cache, which drops what a commit changed). */
export interface NotifierWatcher {
  /** A commit on `stream` at sequence `seq` of an event of `type` (undefined from a writer that did not say: anything may have changed). */
  event?(stream: string, seq: number, type: string | undefined): void;
  /** The LISTEN connection went: commits go unheard until `listening`. */
  lost?(): void;
  /** LISTEN is active (the first time and after every reconnect); what committed before is not told. */
  listening?(): void;
}

export interface NotifierOptions {
  url: string;
  log: Logger;
  /** First reconnect delay after the LISTEN connection drops; doubles up to 5 s. @default 100 */
  reconnectDelayMs?: number;
  /** application_name of the LISTEN connection (operators and tests find it by this). @default keelson-listener */
  applicationName?: string;
}

/**
 * One LISTEN connection per process. A notification only says "stream S has something past N";
 * readers always go back to the events table. A dropped connection wakes every waiter once it is
 * listening again, so whatever committed while it was down is read, never lost.
 */
export class EventNotifier {
  private client: Client | undefined;
  private readonly versions = new Map<string, number>();
  /** The highest sequence each stream was notified at (what lag is measured against). */
  private readonly heads = new Map<string, number>();
  private epoch = 0;
  private readonly waiters = new Set<Waiter>();
  private readonly watchers = new Set<NotifierWatcher>();
  private listening: Promise<void> | undefined;
  private stopped = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private delay: number;

  constructor(private readonly opts: NotifierOptions) {
    this.delay = opts.reconnectDelayMs ?? 100;
  }

  /** Resolves once LISTEN is active (connecting on first call), or at once after `stop()`. */
  ready(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.listening ??= this.connect().catch((err: unknown) => {
      this.listening = undefined;
      throw err;
    });
    return this.listening;
  }

  /** Connects like `ready()`, but a failure only logs and keeps retrying in the background (with the reconnect backoff). */
  async start(): Promise<void> {
    await this.ready().catch((err: unknown) => {
      this.opts.log.warn({ err }, 'event LISTEN failed; retrying');
      this.scheduleReconnect();
    });
  }

  /** Tells `watcher` of every commit notified, and of the LISTEN connection going and coming back; returns its removal. */
  watch(watcher: NotifierWatcher): () => void {
    this.watchers.add(watcher);
    return () => void this.watchers.delete(watcher);
  }

  /** The backend pid of the LISTEN connection, or undefined while it is down. */
  get backendPid(): number | undefined {
    return (this.client as unknown as { processID?: number } | undefined)?.processID;
  }

  /** True after `stop()`: no waiter is woken again, so tails end instead of waiting. */
  get isStopped(): boolean {
    return this.stopped;
  }

  /** The highest sequence of `stream` notified since this process listened (0 when none). */
  headOf(stream: string): number {
    return this.heads.get(stream) ?? 0;
  }

  ticket(stream: string): Ticket {
    return { stream, version: this.versions.get(stream) ?? 0, epoch: this.epoch };
  }

  /** Resolves when the stream may have changed since `ticket` (or at once if it already did). */
  wait(ticket: Ticket, signal: AbortSignal): Promise<void> {
    if (this.changedSince(ticket) || signal.aborted || this.stopped) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const waiter: Waiter = {
        stream: ticket.stream,
        wake: () => {
          this.waiters.delete(waiter);
          signal.removeEventListener('abort', waiter.wake);
          resolve();
        },
      };
      this.waiters.add(waiter);
      signal.addEventListener('abort', waiter.wake, { once: true });
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    for (const w of [...this.waiters]) w.wake();
    const client = this.client;
    this.client = undefined;
    if (client) await client.end().catch(() => undefined);
  }

  private changedSince(t: Ticket): boolean {
    return t.epoch !== this.epoch || (this.versions.get(t.stream) ?? 0) !== t.version;
  }

  private async connect(): Promise<void> {
    const client = new Client({
      connectionString: this.opts.url,
      application_name: this.opts.applicationName ?? 'keelson-listener',
    });
    client.on('notification', (msg) => {
      if (msg.channel !== EVENTS_CHANNEL || !msg.payload) return;
      const { stream, seq, type } = parseNotification(msg.payload);
      this.versions.set(stream, (this.versions.get(stream) ?? 0) + 1);
      if (Number.isSafeInteger(seq) && seq > (this.heads.get(stream) ?? 0)) this.heads.set(stream, seq);
      for (const w of this.watchers) w.event?.(stream, seq, type);
      for (const w of [...this.waiters]) if (w.stream === stream) w.wake();
    });
    const lost = (err?: Error) => {
      if (this.client !== client || this.stopped) return;
      this.client = undefined;
      for (const w of this.watchers) w.lost?.();
      this.opts.log.warn({ err }, 'event LISTEN connection lost; reconnecting');
      this.scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    try {
      await client.connect();
      await client.query(`LISTEN ${EVENTS_CHANNEL}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.delay = this.opts.reconnectDelayMs ?? 100;
    // Anything committed while no LISTEN was active is found by a re-read: wake everyone.
    this.epoch += 1;
    for (const w of this.watchers) w.listening?.();
    for (const w of [...this.waiters]) w.wake();
  }

  private scheduleReconnect(): void {
    if (this.stopped) return;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => {
      this.listening = this.connect().catch((err: unknown) => {
        this.opts.log.warn({ err }, 'event LISTEN reconnect failed');
        this.delay = Math.min(this.delay * 2, 5000);
        this.scheduleReconnect();
      });
    }, this.delay);
    this.reconnectTimer.unref();
  }
}
