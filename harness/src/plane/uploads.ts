import { randomUUID, createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import { MeshError, isUuid, type Actor } from '@keelson/schema';
import { z } from 'zod';

/** A file name as an upload keeps it: one path component, printable, at most 200 characters. */
export const uploadNameSchema = z
  .string()
  .min(1, 'is required')
  .max(200, 'must be at most 200 characters')
  .refine((n) => n !== '.' && n !== '..' && !/[/\\]/.test(n), 'must be a file name, not a path')
  .refine((n) => !/[\u0000-\u001f\u007f]/.test(n), 'must not contain control characters');

/** A media type as `type/subtype`, parameters allowed. */
export const uploadMimeSchema = z
  .string()
  .max(200, 'must be at most 200 characters')
  .regex(/^[\w.+-]+\/[\w.+-]+(\s*;.*)?$/, 'must be a media type such as text/plain');

/** What `POST /api/uploads` answers, and what a turn's attachment id stands for. */
export interface UploadRecord {
  id: string;
  name: string;
  mime: string;
  size: number;
  sha256: string;
  /** `<kind>:<subject>` of the caller who uploaded it: only they attach it. */
  owner: string;
  createdAt: string;
}

const recordSchema = z.strictObject({
  id: z.string(),
  name: z.string(),
  mime: z.string(),
  size: z.number().int().nonnegative(),
  sha256: z.string(),
  owner: z.string(),
  createdAt: z.string(),
});

export interface UploadsOptions {
  /** `<KEELSON_HOME>/.data/uploads`: each upload's file at `<dir>/<id>/<name>`, its record at `<dir>/<id>.json`. */
  dir: string;
  maxBytes: number;
  maxAgeS: number;
  now?: () => Date;
}

/** Who owns an upload: the actor, whichever of their credentials made it. */
export function uploadOwner(actor: Actor): string {
  return `${actor.kind}:${actor.subject}`;
}

/**
 * Uploads staged for turns (seed 002's `POST /api/uploads`): a file and its record under the mesh's
 * data folder, shared by every process of one Keelson home. The record is written last, so an upload
 * whose record exists is whole; one cut short leaves nothing a turn can attach. Uploads older than
 * `maxAgeS` are refused and removed by the next upload.
 */
export class Uploads {
  private readonly now: () => Date;

  constructor(private readonly opts: UploadsOptions) {
    this.now = opts.now ?? (() => new Date());
  }

  get maxBytes(): number {
    return this.opts.maxBytes;
  }

  /**
   * Stores `body` as a new upload of `owner`'s.
   * @throws BAD_USER_INPUT (name, mime), a MeshError-like `{ status: 413 }` refusal past `maxBytes`
   */
  async save(body: Readable, meta: { name: unknown; mime?: unknown; owner: string }): Promise<UploadRecord & { path: string }> {
    const name = parseField(uploadNameSchema, meta.name, 'name');
    const mime = meta.mime === undefined || meta.mime === null || meta.mime === '' ? 'application/octet-stream' : parseField(uploadMimeSchema, meta.mime, 'mime');
    await this.sweep();
    const id = randomUUID();
    const folder = join(this.opts.dir, id);
    const path = join(folder, name);
    await mkdir(folder, { recursive: true, mode: 0o700 });
    const hash = createHash('sha256');
    let size = 0;
    const max = this.opts.maxBytes;
    // Past the cap nothing more is written, but the body is read to its end: the request stays whole,
    // so the client reads the 413 rather than a reset connection.
    const counter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        if (size > max) return done();
        hash.update(chunk);
        done(null, chunk);
      },
    });
    try {
      await pipeline(body, counter, createWriteStream(path, { flags: 'wx', mode: 0o600 }));
      if (size > max) throw new UploadTooLarge(max);
    } catch (err) {
      await rm(folder, { recursive: true, force: true });
      throw err;
    }
    const record: UploadRecord = { id, name, mime, size, sha256: hash.digest('hex'), owner: meta.owner, createdAt: this.now().toISOString() };
    const tmp = join(this.opts.dir, `.${id}.json.tmp`);
    try {
      await writeFile(tmp, JSON.stringify(record), { mode: 0o600 });
      await rename(tmp, this.recordPath(id));
    } catch (err) {
      await rm(tmp, { force: true });
      await rm(folder, { recursive: true, force: true });
      throw err;
    }
    return { ...record, path };
  }

  /**
   * The file of upload `id` for `owner` to attach.
   * @throws NOT_FOUND when there is no such upload of theirs (another's is not told apart) or it expired
   */
  async open(id: string, owner: string): Promise<{ record: UploadRecord; path: string }> {
    const gone = new MeshError('NOT_FOUND', `attachments: upload ${JSON.stringify(id)} does not exist (or has expired; uploads stay ${this.opts.maxAgeS} s)`);
    if (!isUuid(id)) throw gone;
    const record = await this.read(id);
    if (!record || record.owner !== owner || this.expired(record)) throw gone;
    const path = join(this.opts.dir, id, record.name);
    const st = await stat(path).catch(() => null);
    if (!st?.isFile() || st.size !== record.size) throw gone;
    return { record, path };
  }

  /** Whether `text` names an upload (an id) rather than a path in the session's folder. */
  static isId(text: string): boolean {
    return isUuid(text);
  }

  private recordPath(id: string): string {
    return join(this.opts.dir, `${id}.json`);
  }

  private async read(id: string): Promise<UploadRecord | null> {
    let text: string;
    try {
      text = await readFile(this.recordPath(id), 'utf8');
    } catch {
      return null;
    }
    try {
      return recordSchema.parse(JSON.parse(text));
    } catch {
      return null;
    }
  }

  private expired(record: UploadRecord): boolean {
    return this.now().getTime() - Date.parse(record.createdAt) > this.opts.maxAgeS * 1000;
  }

  /** Removes expired uploads, and folders whose record never came (an upload cut short by a crash) once as old. */
  private async sweep(): Promise<void> {
    let entries: string[];
    try {
      entries = await readdir(this.opts.dir);
    } catch {
      await mkdir(this.opts.dir, { recursive: true, mode: 0o700 });
      return;
    }
    const cutoff = this.now().getTime() - this.opts.maxAgeS * 1000;
    for (const entry of entries) {
      if (!isUuid(entry)) continue;
      const record = await this.read(entry);
      const made = record ? Date.parse(record.createdAt) : ((await stat(join(this.opts.dir, entry)).catch(() => null))?.mtimeMs ?? Infinity);
      if (made >= cutoff) continue;
      await rm(this.recordPath(entry), { force: true });
      await rm(join(this.opts.dir, entry), { recursive: true, force: true });
    }
  }
}

/** An upload past `maxBytes`: answered 413. */
export class UploadTooLarge extends Error {
  readonly status = 413;
  constructor(readonly maxBytes: number) {
    super(`the upload exceeds ${maxBytes} bytes (KEELSON_UPLOAD_MAX_BYTES)`);
  }
}

function parseField<T>(schema: z.ZodType<T>, value: unknown, field: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new MeshError('BAD_USER_INPUT', `${field}: ${parsed.error.issues[0]?.message ?? 'is invalid'}`);
  return parsed.data;
}
