import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';

/** Where a note came from. */
export const noteSourceSchema = z.enum(['ingest', 'tool', 'board']);

export const noteSchema = z.strictObject({
  id: z.string().regex(/^[0-9a-f]{8,32}$/),
  title: z.string().min(1).max(120),
  text: z.string().min(1),
  tags: z.array(z.string()),
  pinned: z.boolean(),
  source: noteSourceSchema,
  sourceConversationId: z.string().optional(),
  createdAt: z.string(),
});
export type Note = z.infer<typeof noteSchema>;

const fileSchema = z.strictObject({ version: z.literal(1), notes: z.array(noteSchema) });

/** The longest note kept, in characters. */
export const NOTE_TEXT_MAX = 32_000;

/** `#tag` words of a text, lowercased, unique, in order of appearance. */
export function tagsOf(text: string): string[] {
  const tags = [...text.matchAll(/(?:^|\s)#([a-z0-9][a-z0-9_-]{0,40})/gi)].map((m) => m[1]!.toLowerCase());
  return [...new Set(tags)];
}

/** The title of a note: its first non-empty line, cut to 80 characters. */
export function noteTitleOf(text: string): string {
  const line = text.split('\n').map((l) => l.trim()).find((l) => l.length > 0) ?? 'Untitled';
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}

/** Serializes writes per file across every store on it in this process. */
const chains = new Map<string, Promise<unknown>>();

/**
 * Notes in one JSON file under the rib's data directory (`<home>/rib-notes/notes.json`), created on
 * the first write. Writes are serialized and atomic (write a temp file, then rename); a corrupt
 * file reads as an error rather than as "no notes", so nothing overwrites it silently.
 */
export class NoteStore {
  readonly file: string;

  constructor(readonly dir: string) {
    this.file = join(dir, 'notes.json');
  }

  /** Every note, newest first. */
  async list(): Promise<Note[]> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const parsed = fileSchema.safeParse(JSON.parse(text));
    if (!parsed.success) throw new Error(`${this.file} is not a notes file; fix or move it`);
    return parsed.data.notes;
  }

  async get(id: string): Promise<Note | undefined> {
    return (await this.list()).find((n) => n.id === id);
  }

  async add(input: { text: string; source: Note['source']; sourceConversationId?: string }): Promise<Note> {
    const text = input.text.trim().slice(0, NOTE_TEXT_MAX);
    if (!text) throw new Error('a note needs some text');
    const note: Note = {
      id: randomBytes(6).toString('hex'),
      title: noteTitleOf(text),
      text,
      tags: tagsOf(text),
      pinned: false,
      source: input.source,
      ...(input.sourceConversationId ? { sourceConversationId: input.sourceConversationId } : {}),
      createdAt: new Date().toISOString(),
    };
    await this.update((notes) => [note, ...notes]);
    return note;
  }

  /** Sets `pinned`; false when there is no such note. */
  async setPinned(id: string, pinned: boolean): Promise<boolean> {
    let found = false;
    await this.update((notes) =>
      notes.map((n) => {
        if (n.id !== id) return n;
        found = true;
        return { ...n, pinned };
      }),
    );
    return found;
  }

  /** False when there is no such note. */
  async remove(id: string): Promise<boolean> {
    let found = false;
    await this.update((notes) => notes.filter((n) => (n.id === id ? ((found = true), false) : true)));
    return found;
  }

  /** Removes every note; resolves with how many there were. */
  async clear(): Promise<number> {
    let count = 0;
    await this.update((notes) => ((count = notes.length), []));
    return count;
  }

  /** Notes whose text contains every word of `query` (a `#tag` word matches tags), newest first. */
  async search(query: string): Promise<Note[]> {
    const words = query.toLowerCase().split(/\s+/).filter(Boolean);
    return (await this.list()).filter((n) =>
      words.every((w) => (w.startsWith('#') ? n.tags.includes(w.slice(1)) : n.text.toLowerCase().includes(w))),
    );
  }

  /** Waits for every write queued so far. */
  async flush(): Promise<void> {
    await chains.get(this.file)?.catch(() => undefined);
  }

  private update(change: (notes: Note[]) => Note[]): Promise<void> {
    const previous = chains.get(this.file) ?? Promise.resolve();
    const next = previous
      .catch(() => undefined)
      .then(async () => {
        const notes = change(await this.list());
        await mkdir(this.dir, { recursive: true });
        const tmp = `${this.file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
        await writeFile(tmp, `${JSON.stringify({ version: 1, notes }, null, 2)}\n`, { mode: 0o600 });
        await rename(tmp, this.file);
      });
    chains.set(this.file, next);
    return next;
  }
}
