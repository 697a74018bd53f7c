import { MeshError } from '@keelson/schema';
import type { BusSetup } from '../bus/busSetup';
import { ClickClackClient } from '../bus/clickclack';
import { ManagedBus } from '../bus/managedBus';

/** How long an owner session minted through the magic link is reused before a fresh one. */
const OWNER_SESSION_REUSE_MS = 10 * 60 * 1000;

/**
 * The bus as this process reaches it: the owner's client (managed: a session signed in through
 * ClickClack's `admin magic-link create` on the data directory the mesh owns, kept in memory only;
 * external: CLICKCLACK_TOKEN, else a dev-bootstrap server's loopback magic link), and in managed mode
 * the server itself, started or adopted on demand.
 */
export class BusAccess {
  readonly managed: ManagedBus | undefined;
  private owner: { client: ClickClackClient; until: number } | undefined;
  private minting: Promise<ClickClackClient> | undefined;

  constructor(
    readonly setup: BusSetup,
    env: Record<string, string | undefined> = process.env,
  ) {
    this.managed = setup.mode === 'MANAGED' ? new ManagedBus({ binary: setup.binary, dir: setup.dataRoot, port: setup.port, env }) : undefined;
  }

  /** The bus URL, or throws SERVICE_UNAVAILABLE with the reason. */
  get url(): string {
    if (this.setup.mode === 'UNAVAILABLE') throw new MeshError('SERVICE_UNAVAILABLE', this.setup.reason);
    return this.setup.url;
  }

  /** Managed: the server up (started or adopted). External: reachable. */
  async ensure(): Promise<void> {
    if (this.setup.mode === 'UNAVAILABLE') throw new MeshError('SERVICE_UNAVAILABLE', this.setup.reason);
    if (this.managed) {
      await this.managed.ensure();
      return;
    }
    if (!(await new ClickClackClient({ url: this.setup.url }).ready())) {
      throw new MeshError('SERVICE_UNAVAILABLE', `ClickClack at ${this.setup.url} is not ready (GET /readyz)`);
    }
  }

  /** A client speaking as the owner (the operator). */
  async ownerClient(): Promise<ClickClackClient> {
    if (this.setup.mode === 'UNAVAILABLE') throw new MeshError('SERVICE_UNAVAILABLE', this.setup.reason);
    if (this.setup.mode === 'EXTERNAL' && this.setup.token) return new ClickClackClient({ url: this.setup.url, token: this.setup.token });
    if (this.owner && this.owner.until > Date.now()) return this.owner.client;
    const setup = this.setup;
    this.minting ??= (async () => {
      const base = new ClickClackClient({ url: setup.url });
      const token = this.managed ? await this.managed.ownerSession() : await base.magicSession();
      const client = base.withToken(token);
      this.owner = { client, until: Date.now() + OWNER_SESSION_REUSE_MS };
      return client;
    })().finally(() => (this.minting = undefined));
    return this.minting;
  }

  /** Forgets the owner session (it was rejected: the server was reset, say). */
  invalidateOwner(): void {
    this.owner = undefined;
  }

  /** A client speaking with `token` (an agent's). */
  as(token: string): ClickClackClient {
    return new ClickClackClient({ url: this.url, token });
  }
}
