import type { MessageChunk } from '@keelson/ribs-contract';

/**
 * The `stream` half of a turn: chunks buffered as they are pushed (a rib that never reads the stream
 * costs only memory), read once by one consumer, ended by `close()`.
 */
export class ChunkQueue implements AsyncIterable<MessageChunk> {
  private readonly items: MessageChunk[] = [];
  private closed = false;
  private wake: (() => void) | undefined;

  push(chunk: MessageChunk): void {
    if (this.closed) return;
    this.items.push(chunk);
    this.wake?.();
  }

  close(): void {
    this.closed = true;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<MessageChunk> {
    for (;;) {
      const next = this.items.shift();
      if (next) {
        yield next;
        continue;
      }
      if (this.closed) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }
}
