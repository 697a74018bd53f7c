import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { Uploads, UploadTooLarge, uploadOwner } from './uploads';

let dir: string;
let clock: Date;
let uploads: Uploads;
const alice = uploadOwner({ kind: 'jwt', subject: 'alice' });
const bob = uploadOwner({ kind: 'jwt', subject: 'bob' });

beforeEach(async () => {
  dir = join(await mkdtemp(join(tmpdir(), 'keelson-uploads-')), 'uploads');
  clock = new Date('2026-12-05T10:00:00Z');
  uploads = new Uploads({ dir, maxBytes: 1024, maxAgeS: 3600, now: () => clock });
});
afterEach(() => rm(join(dir, '..'), { recursive: true, force: true }));

/** A body in several chunks, as a request streams it. */
const body = (...chunks: string[]) => Readable.from(chunks.map((c) => Buffer.from(c)));

describe('Uploads', () => {
  it('stores a file and its record, opened by its owner only', async () => {
    const saved = await uploads.save(body('hello ', 'world'), { name: 'notes.txt', mime: 'text/plain', owner: alice });
    expect(saved).toMatchObject({ name: 'notes.txt', mime: 'text/plain', size: 11, owner: alice, sha256: createHash('sha256').update('hello world').digest('hex') });
    expect(saved.path).toBe(join(dir, saved.id, 'notes.txt'));
    expect(await readFile(saved.path, 'utf8')).toBe('hello world');
    expect((await stat(saved.path)).mode & 0o777).toBe(0o600);
    await expect(uploads.open(saved.id, alice)).resolves.toMatchObject({ path: saved.path, record: { id: saved.id, size: 11 } });
    // Another caller's attachment of it is answered as if it did not exist.
    await expect(uploads.open(saved.id, bob)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(uploads.open('not-an-id', alice)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('defaults the mime to application/octet-stream and refuses bad names and mimes, keeping nothing', async () => {
    expect((await uploads.save(body('x'), { name: 'a.bin', owner: alice })).mime).toBe('application/octet-stream');
    const before = await readdir(dir);
    for (const name of ['', '.', '..', '../x', 'a/b', 'a\\b', 'tab\there', 'x'.repeat(201), 42]) {
      await expect(uploads.save(body('x'), { name, owner: alice })).rejects.toMatchObject({ code: 'BAD_USER_INPUT', message: expect.stringMatching(/^name: /) });
    }
    await expect(uploads.save(body('x'), { name: 'ok.txt', mime: 'not a mime', owner: alice })).rejects.toMatchObject({ code: 'BAD_USER_INPUT', message: expect.stringMatching(/^mime: /) });
    expect(await readdir(dir)).toEqual(before);
  });

  it('refuses a file past maxBytes after reading it all, keeping nothing of it', async () => {
    const chunk = 'y'.repeat(300);
    let read = 0;
    const stream = Readable.from(
      (function* () {
        for (let i = 0; i < 5; i++) {
          read++;
          yield Buffer.from(chunk);
        }
      })(),
    );
    const err = await uploads.save(stream, { name: 'big.txt', owner: alice }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UploadTooLarge);
    expect(err).toMatchObject({ status: 413, maxBytes: 1024 });
    expect(read).toBe(5);
    expect(await readdir(dir)).toEqual([]);
    // Exactly at the cap is taken.
    expect((await uploads.save(body('z'.repeat(1024)), { name: 'edge.txt', owner: alice })).size).toBe(1024);
  });

  it('keeps nothing of a body that fails midway', async () => {
    const broken = new Readable({
      read() {
        this.push(Buffer.from('partial'));
        this.destroy(new Error('connection reset'));
      },
    });
    await expect(uploads.save(broken, { name: 'cut.txt', owner: alice })).rejects.toThrow('connection reset');
    expect(await readdir(dir)).toEqual([]);
  });

  it('refuses an expired upload and removes it with the next upload', async () => {
    const old = await uploads.save(body('old'), { name: 'old.txt', owner: alice });
    clock = new Date(clock.getTime() + 3601 * 1000);
    await expect(uploads.open(old.id, alice)).rejects.toMatchObject({ code: 'NOT_FOUND', message: expect.stringMatching(/expired/) });
    const fresh = await uploads.save(body('new'), { name: 'new.txt', owner: alice });
    expect((await readdir(dir)).sort()).toEqual([fresh.id, `${fresh.id}.json`].sort());
  });

  it('does not open an upload whose file changed size after it was recorded', async () => {
    const saved = await uploads.save(body('abc'), { name: 'a.txt', owner: alice });
    await rm(saved.path);
    await expect(uploads.open(saved.id, alice)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
