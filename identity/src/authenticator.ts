import type { EventLog } from '@keelson/platform';
import { MeshError, streams, type Caller } from '@keelson/schema';
import type { Logger } from '@keelson/service';
import type { DataSource } from 'typeorm';
import type { JwtVerifier } from './jwtVerifier';
import { TOKEN_PREFIX, type IdentityEventPayload, type TokenStore } from './tokenStore';

/** An authenticated credential: the caller, and when the credential stops being valid (if known). */
export interface AuthenticatedCaller {
  caller: Caller;
  /** Epoch ms at which a JWT expires (API tokens are rechecked against the store instead). */
  expiresAt?: number;
}

/**
 * Turns an `authorization` header into a caller: `Bearer kmt_…` is an API token, another bearer a
 * JWT of the configured identity provider. Also tells the gateway when a token is revoked anywhere
 * in the mesh (the identity stream), so it can close that token's sockets at once.
 */
export class Authenticator {
  private readonly revokedListeners = new Set<(tokenId: string) => void>();
  private watch: AsyncIterableIterator<unknown> | undefined;
  /** A start of watching in flight (between its read of the stream's position and the tail it opens). */
  private watchStarting: Promise<void> | undefined;

  constructor(
    private readonly tokens: TokenStore,
    private readonly jwt: JwtVerifier | undefined,
    private readonly dataSource: DataSource,
    private readonly events: EventLog,
    private readonly log: Logger,
  ) {}

  /** @throws MeshError UNAUTHENTICATED when the header is missing, not a bearer, or the credential is not accepted. */
  async authenticate(authorization: string | undefined): Promise<AuthenticatedCaller> {
    if (!authorization) throw new MeshError('UNAUTHENTICATED', 'authentication required: send authorization: Bearer <token> (README "Security")');
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!m) throw new MeshError('UNAUTHENTICATED', 'the authorization header must be "Bearer <token>"');
    const credential = m[1]!;
    if (credential.startsWith(TOKEN_PREFIX)) return { caller: await this.tokens.authenticate(credential) };
    if (!this.jwt) throw new MeshError('UNAUTHENTICATED', 'the bearer token is not a valid API token');
    if (credential.split('.').length !== 3) throw new MeshError('UNAUTHENTICATED', 'the bearer token is neither an API token nor a JWT');
    const caller = await this.jwt.verify(credential);
    const exp = JSON.parse(Buffer.from(credential.split('.')[1]!, 'base64url').toString('utf8')).exp as number | undefined;
    return { caller, ...(typeof exp === 'number' ? { expiresAt: exp * 1000 } : {}) };
  }

  /** The enrolled device a client certificate (DER) stands for. @throws MeshError UNAUTHENTICATED */
  async authenticateDevice(certificateDer: Uint8Array): Promise<AuthenticatedCaller> {
    return { caller: await this.tokens.authenticateDevice(certificateDer) };
  }

  /** Of these token ids, those still live (for rechecking open sockets). */
  live(tokenIds: readonly string[]): Promise<Set<string>> {
    return this.tokens.live(tokenIds);
  }

  /** Calls `listener` with the id of every token revoked from now on, in any process. */
  onRevoked(listener: (tokenId: string) => void): () => void {
    this.revokedListeners.add(listener);
    // A failed start is retried by the next listener; the periodic recheck of open sockets covers the gap.
    this.startWatching().catch((err: unknown) => this.log.warn({ err }, 'following token revocations could not start'));
    return () => this.revokedListeners.delete(listener);
  }

  /** Stops following the identity stream. */
  async close(): Promise<void> {
    await this.watchStarting?.catch(() => undefined);
    await this.watch?.return?.();
    this.watch = undefined;
  }

  /** Follows the identity stream unless it already does or is about to: one tail however many listeners ask at once. */
  private startWatching(): Promise<void> {
    if (this.watch) return Promise.resolve();
    this.watchStarting ??= this.openTail().finally(() => (this.watchStarting = undefined));
    return this.watchStarting;
  }

  private async openTail(): Promise<void> {
    const [row] = (await this.dataSource.query('SELECT last_seq FROM event_streams WHERE stream = $1', [streams.identity])) as { last_seq: string }[];
    const tail = this.events.tail<IdentityEventPayload>(streams.identity, row ? String(row.last_seq) : null);
    this.watch = tail;
    void (async () => {
      try {
        for await (const event of tail) {
          if (event.type !== 'TOKEN_REVOKED') continue;
          this.tokens.forget(event.payload.tokenId);
          for (const listener of this.revokedListeners) listener(event.payload.tokenId);
        }
      } catch (err) {
        // The periodic recheck of open sockets still catches revocations; watching resumes on the next listener.
        this.log.warn({ err }, 'following token revocations failed');
        if (this.watch === tail) this.watch = undefined;
      }
    })();
  }
}
