import { constants as fsConstants } from 'node:fs';
import { access } from 'node:fs/promises';
import { delimiter, join } from 'node:path';

/** True when `file` exists and this process may execute it. */
export async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The first executable named `command` in the folders of `searchPath` (a PATH value), then of `more`; undefined when none. */
export async function findExecutable(command: string, searchPath: string, more: readonly string[] = []): Promise<string | undefined> {
  for (const dir of [...searchPath.split(delimiter).filter(Boolean), ...more]) {
    const candidate = join(dir, command);
    if (await isExecutable(candidate)) return candidate;
  }
  return undefined;
}
