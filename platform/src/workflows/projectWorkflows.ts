import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';

/**
 * A project's own workflows, as both the runs catalog (which loads them) and the projects subgraph
 * (whose trust covers them) see them: one folder, one file selection, one digest.
 */

/** The extensions of a workflow file (YAML, of which JSON is a subset). */
export const WORKFLOW_FILE_EXTENSIONS: readonly string[] = ['.yaml', '.yml', '.json'];

/** `<root>/.keelson/workflows`. */
export function projectWorkflowsDir(root: string): string {
  return join(root, '.keelson', 'workflows');
}

/**
 * The workflow files directly in `dir` (regular files with a workflow extension, any case), in name
 * order; a missing folder (or a file where the folder should be) has none.
 * @throws what reading the folder threw otherwise
 */
export async function workflowFileNames(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries.filter((d) => d.isFile() && WORKFLOW_FILE_EXTENSIONS.includes(extname(d.name).toLowerCase())).map((d) => d.name).sort();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return [];
    throw err;
  }
}

/** The digest of a set of workflow files, by name and text (as UTF-8), whatever order they come in. */
export function workflowsDigestOf(files: readonly { name: string; text: string }[]): string {
  const hash = createHash('sha256').update('keelson-workflows-v1\0');
  for (const f of [...files].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const bytes = Buffer.from(f.text, 'utf8');
    hash.update(`${f.name}\0${bytes.length}\0`).update(bytes);
  }
  return `sha256:${hash.digest('hex')}`;
}

/**
 * The digest of a project's own workflows as they are now: every file the catalog would load. A
 * missing or empty folder has a digest too, so a first file added later changes it.
 */
export async function workflowsDigest(root: string): Promise<string> {
  const dir = projectWorkflowsDir(root);
  const names = await workflowFileNames(dir);
  return workflowsDigestOf(await Promise.all(names.map(async (name) => ({ name, text: await readFile(join(dir, name), 'utf8') }))));
}
