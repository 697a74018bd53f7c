import type { Logger } from '@keelson/service';
import type { DataSource } from 'typeorm';
import type { EmbeddingsClient } from './embeddings';
import { embedPending } from './vectorStore';

/**
 * Keeps vectors caught up in HYBRID mode: `kick()` after a commit embeds whatever has no vector yet,
 * a batch at a time, until nothing is pending. One run at a time; a kick during a run makes it go
 * round once more. A failing endpoint ends the run (logged); the next kick picks up what is left,
 * and lexical search covers those items meanwhile.
 */
export class VectorIndexer {
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(
    private readonly dataSource: DataSource,
    private readonly client: EmbeddingsClient,
    private readonly log: Logger,
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

  /** Resolves when the current run (if any) has finished. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  private async run(): Promise<void> {
    try {
      while (!this.stopped && (await embedPending(this.dataSource, this.client)) > 0);
    } catch (err) {
      this.log.warn({ err }, 'embedding new memory failed; those items are found lexically until the next append retries');
    }
  }
}
