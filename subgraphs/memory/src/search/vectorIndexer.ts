import type { Logger } from '@keelson/service';
import type { DataSource } from 'typeorm';
import type { EmbeddingsClient } from './embeddings';
import type { SearchModeState } from './searchMode';
import { embedCursorStart, embedPending, type VectorStore } from './vectorStore';

/**
 * Keeps vectors caught up in HYBRID mode: `kick()` after a commit embeds whatever has no vector yet,
 * a batch at a time, until nothing is pending. One run at a time; a kick during a run makes it go
 * round once more (a run looks past the ids it has done, so items committed behind it wait for that
 * round). A failing endpoint ends the run (logged, and reported by `memorySearchMode`); the next kick
 * picks up what is left, and lexical search covers those items meanwhile.
 */
export class VectorIndexer {
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(
    private readonly dataSource: DataSource,
    private readonly client: EmbeddingsClient,
    private readonly store: VectorStore,
    private readonly log: Logger,
    private readonly state?: SearchModeState,
    /** Items per embeddings request. @default 64 */
    private readonly batch = 64,
  ) {}

  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.run().finally(() => {
      this.running = undefined;
      if (this.again && !this.stopped) {
        this.again = false;
        this.kick();
      }
    });
  }

  /** Resolves when the current run (if any), and the round a kick during it asked for, have finished. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  private async run(): Promise<void> {
    const cursor = embedCursorStart();
    try {
      while (!this.stopped && (await embedPending(this.dataSource, this.client, this.store, cursor, this.batch)) === this.batch);
      this.state?.indexerSucceeded();
    } catch (err) {
      this.state?.indexerFailed(err as Error);
      this.log.warn({ err }, 'embedding new memory failed; those items are found lexically until the next append retries');
    }
  }
}
