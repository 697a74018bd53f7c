import type { CredentialStore } from '@keelson/host';

/** A process-local `CredentialStore` (tests); `set` is the test's way in, ribs can only read. */
export class InMemoryCredentialStore implements CredentialStore {
  private readonly secrets = new Map<string, string>();
  /** Every account read, in order. */
  readonly reads: string[] = [];

  constructor(initial: Record<string, string> = {}) {
    for (const [account, value] of Object.entries(initial)) this.secrets.set(account, value);
  }

  set(account: string, value: string): void {
    this.secrets.set(account, value);
  }

  async get(account: string): Promise<string | undefined> {
    this.reads.push(account);
    return this.secrets.get(account);
  }
}
