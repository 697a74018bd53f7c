import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';

/** The files the runs catalog loads from a project: `*.yaml`, `*.yml`, `*.json` directly in the folder. */
const EXTENSIONS = new Set(['.yaml', '.yml', '.json']);

/**
 * The digest of a project's own workflows (`<root>/.keelson/workflows`): every file the catalog
 * would load, by name and content, in name order. A missing or empty folder has a digest too, so a
 * first workflow file added later changes it.
 */
export async function workflowsDigest(root: string): Promise<string> {
  const dir = join(root, '.keelson', 'workflows');
  const hash = createHash('sha256').update('keelson-workflows-v1\0');
  let names: string[] = [];
  try {
    names = (await readdir(dir, { withFileTypes: true })).filter((d) => d.isFile() && EXTENSIONS.has(extname(d.name).toLowerCase())).map((d) => d.name).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && (err as NodeJS.ErrnoException).code !== 'ENOTDIR') throw err;
  }
  for (const name of names) {
    const content = await readFile(join(dir, name));
    hash.update(`${name}\0${content.length}\0`).update(content);
  }
  return `sha256:${hash.digest('hex')}`;
}
