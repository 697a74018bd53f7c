/** A bot token held in this process's memory. */
export interface HeldToken {
  tokenId: string;
  token: string;
}

/**
 * Agents' bot tokens, in this worker's memory only (seed 001: "Tokens live in memory only"). Never
 * written to workflow history, a log, an event or the database: the workflow records token *ids*,
 * and a worker that has no token for an agent mints a new one and revokes the old id.
 */
export class TokenVault {
  private readonly held = new Map<string, HeldToken>();

  private key(swarmId: string, agentId: string): string {
    return `${swarmId}\u0000${agentId}`;
  }

  get(swarmId: string, agentId: string): HeldToken | undefined {
    return this.held.get(this.key(swarmId, agentId));
  }

  put(swarmId: string, agentId: string, token: HeldToken): void {
    this.held.set(this.key(swarmId, agentId), token);
  }

  /** Drops one agent's token (it was revoked or rejected). */
  drop(swarmId: string, agentId: string): void {
    this.held.delete(this.key(swarmId, agentId));
  }

  /** Drops every token of a swarm (it ended). */
  forget(swarmId: string): void {
    for (const key of [...this.held.keys()]) if (key.startsWith(`${swarmId}\u0000`)) this.held.delete(key);
  }

  /** How many tokens this process holds (tests). */
  get size(): number {
    return this.held.size;
  }
}

/** The process's one vault: every activity of this worker shares it. */
export const processVault = new TokenVault();
