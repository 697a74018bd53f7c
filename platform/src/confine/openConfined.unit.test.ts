import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfinementError, openConfinedForRead, openConfinedForWrite } from './index';

// A real directory and a symlink to it: a path through the link stands for a folder on the way that
// was swapped for a link after the check (the descriptor then names another path than the one checked).
const base = realpathSync(mkdtempSync(join(tmpdir(), 'keelson-open-confined-')));
const real = join(base, 'real');
const swapped = join(base, 'swapped');
mkdirSync(real);
symlinkSync(real, swapped);

afterAll(() => rmSync(base, { recursive: true, force: true }));

/** The descriptors this process holds open (a refused open must close its own). */
const openDescriptors = () => readdirSync('/proc/self/fd').length;

async function refusal(open: Promise<unknown>): Promise<ConfinementError> {
  const error = await open.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(ConfinementError);
  return error as ConfinementError;
}

describe('openConfinedForRead', () => {
  it('opens the checked path and reads it', async () => {
    const file = join(real, 'read.txt');
    writeFileSync(file, 'the content');
    const handle = await openConfinedForRead(file);
    try {
      expect((await handle.readFile()).toString()).toBe('the content');
    } finally {
      await handle.close();
    }
  });

  it('refuses a path whose descriptor leads elsewhere, naming both, and closes the descriptor', async () => {
    writeFileSync(join(real, 'moved.txt'), 'x');
    const checked = join(swapped, 'moved.txt');
    const before = openDescriptors();
    const error = await refusal(openConfinedForRead(checked));
    expect(openDescriptors()).toBe(before);
    expect(error).toMatchObject({ code: 'FORBIDDEN', reason: 'changed', path: checked });
    expect(error.message).toBe(`${checked} changed while it was being opened (it now leads to ${join(real, 'moved.txt')}); refused — a folder on the way was replaced by a link`);
  });

  it('refuses a symlink in the last component (O_NOFOLLOW)', async () => {
    symlinkSync(join(real, 'read.txt'), join(real, 'last-link'));
    await expect(openConfinedForRead(join(real, 'last-link'))).rejects.toMatchObject({ code: 'ELOOP' });
  });
});

describe('openConfinedForWrite', () => {
  it('creates a missing file, saying so', async () => {
    const file = join(real, 'new.txt');
    const { handle, created } = await openConfinedForWrite(file);
    try {
      await handle.writeFile('written');
    } finally {
      await handle.close();
    }
    expect(created).toBe(true);
    expect(readFileSync(file, 'utf8')).toBe('written');
  });

  it('opens an existing file (not created) and empties it before the write', async () => {
    const file = join(real, 'old.txt');
    writeFileSync(file, 'a much longer old content');
    const { handle, created } = await openConfinedForWrite(file);
    try {
      await handle.write('new');
    } finally {
      await handle.close();
    }
    expect(created).toBe(false);
    expect(readFileSync(file, 'utf8')).toBe('new');
  });

  it('refuses a new file reached through a swapped folder and removes the file it created there', async () => {
    const checked = join(swapped, 'planted.txt');
    const before = openDescriptors();
    const error = await refusal(openConfinedForWrite(checked));
    expect(openDescriptors()).toBe(before);
    expect(error).toMatchObject({ reason: 'changed', path: checked });
    expect(error.message).toContain(`(it now leads to ${join(real, 'planted.txt')})`);
    expect(existsSync(join(real, 'planted.txt'))).toBe(false);
  });

  it('refuses an existing file reached through a swapped folder, leaving it whole', async () => {
    const target = join(real, 'kept.txt');
    writeFileSync(target, 'keep me');
    const before = openDescriptors();
    const error = await refusal(openConfinedForWrite(join(swapped, 'kept.txt')));
    expect(openDescriptors()).toBe(before);
    expect(error.reason).toBe('changed');
    expect(readFileSync(target, 'utf8')).toBe('keep me');
  });

  it('passes on an error other than an existing file (a missing folder)', async () => {
    await expect(openConfinedForWrite(join(real, 'no-such-dir', 'f.txt'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses a symlink in the last component, leaving its target alone', async () => {
    const target = join(real, 'target.txt');
    writeFileSync(target, 'target');
    symlinkSync(target, join(real, 'write-link'));
    await expect(openConfinedForWrite(join(real, 'write-link'))).rejects.toMatchObject({ code: 'ELOOP' });
    expect(readFileSync(target, 'utf8')).toBe('target');
  });
});
