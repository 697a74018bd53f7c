import { constants, type promises as fsp } from 'node:fs';
import { open, readlink, unlink } from 'node:fs/promises';
import { ConfinementError } from './confinePath';

/** Opening flags that refuse a symlink in the last component (it was resolved before; a swap is refused). */
export const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW;
/** No O_TRUNC: a file is emptied only once the descriptor is known to be the checked path. */
export const WRITE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW;

/**
 * Closes the race between checking a path and opening it: the kernel names the file a descriptor
 * points at (`/proc/self/fd/N`); when a component was swapped for a symlink after the check (the
 * last one is refused by O_NOFOLLOW), that is another path than the canonical one checked, and the
 * descriptor is refused.
 */
async function verifyOpened(handle: fsp.FileHandle, checked: string): Promise<void> {
  const actual = await readlink(`/proc/self/fd/${handle.fd}`).catch((err: unknown) => `(unreadable: ${(err as Error).message})`);
  if (actual !== checked) {
    throw new ConfinementError(`${checked} changed while it was being opened (it now leads to ${actual}); refused — a folder on the way was replaced by a link`, 'changed', checked);
  }
}

/** Opens the canonical `path` for reading, without following a final symlink, and only if the descriptor is that path. */
export async function openConfinedForRead(path: string): Promise<fsp.FileHandle> {
  const handle = await open(path, READ_FLAGS);
  try {
    await verifyOpened(handle, path);
  } catch (err) {
    await handle.close();
    throw err;
  }
  return handle;
}

/**
 * Opens the canonical `path` for writing (created when missing), only if the descriptor is that
 * path, then empties it: a file reached through a folder swapped for a link is neither emptied nor
 * written, and one this call created there is removed again.
 */
export async function openConfinedForWrite(path: string): Promise<{ handle: fsp.FileHandle; created: boolean }> {
  let created = true;
  let handle: fsp.FileHandle;
  try {
    handle = await open(path, WRITE_FLAGS | constants.O_EXCL, 0o644);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    created = false;
    handle = await open(path, WRITE_FLAGS, 0o644);
  }
  try {
    await verifyOpened(handle, path);
  } catch (err) {
    if (created) await readlink(`/proc/self/fd/${handle.fd}`).then((actual) => unlink(actual)).catch(() => undefined);
    await handle.close();
    throw err;
  }
  await handle.truncate(0);
  return { handle, created };
}
