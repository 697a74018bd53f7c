import { join } from 'node:path';
import type { SessionSummary, TranscriptEntry } from '../contract';
import { listDir } from '../confine';
import { isNativeIdOf } from '../ids';
import { readJsonl } from '../stores/jsonl';
import { CliDriver } from './cliDriver';

/**
 * A CLI whose native sessions are JSONL files in a store folder, one per session, grouped one level
 * down (`<store>/<group>[/<below>]/<file>`, a group being a working directory's slug): finding,
 * listing and reading them is shared; what a file name, a file head and a record mean is the CLI's.
 */
export abstract class JsonlStoreDriver extends CliDriver {
  /** The store folder; every file is read confined to it. */
  protected abstract get storeDir(): string;
  /** The folder inside each group that holds its session files ('' for the group itself). */
  protected readonly filesBelow: string = '';
  /** The native id a file name stands for, or null for a file that holds no session. */
  protected abstract nativeIdOfFile(name: string): string | null;
  /** A session's summary from its file. */
  protected abstract summarize(nativeId: string, file: string): Promise<SessionSummary>;
  /** A session's transcript from its file's records. */
  protected abstract entriesOf(records: Record<string, unknown>[]): TranscriptEntry[];

  /** Every session file of the store, group by group. */
  private async *files(): AsyncGenerator<{ nativeId: string; file: string }> {
    for (const group of await listDir(this.storeDir, 'dir')) {
      const dir = join(this.storeDir, group, this.filesBelow);
      for (const name of await listDir(dir, 'file')) {
        const nativeId = this.nativeIdOfFile(name);
        if (nativeId && isNativeIdOf(this.harnessId, nativeId)) yield { nativeId, file: join(dir, name) };
      }
    }
  }

  /** The file of a session: the first group's that holds it. */
  protected async fileOf(nativeId: string): Promise<string | null> {
    if (!isNativeIdOf(this.harnessId, nativeId)) return null;
    for await (const f of this.files()) if (f.nativeId === nativeId) return f.file;
    return null;
  }

  async hasNative(nativeId: string): Promise<boolean> {
    return (await this.fileOf(nativeId)) !== null;
  }

  async listNative(): Promise<SessionSummary[]> {
    const out: SessionSummary[] = [];
    for await (const { nativeId, file } of this.files()) out.push(await this.summarize(nativeId, file));
    return out;
  }

  async findNative(nativeId: string): Promise<SessionSummary | null> {
    const file = await this.fileOf(nativeId);
    return file ? this.summarize(nativeId, file) : null;
  }

  async transcript(nativeId: string): Promise<TranscriptEntry[]> {
    const file = await this.fileOf(nativeId);
    return file ? this.entriesOf(await readJsonl(this.storeDir, file)) : [];
  }
}
