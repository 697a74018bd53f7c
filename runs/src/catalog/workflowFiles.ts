import { readFile } from 'node:fs/promises';
import { basename, join, sep } from 'node:path';
import { workflowFileNames, workflowsDigestOf } from '@keelson/platform';
import { parseWorkflowDefinition } from '@keelson/schema';
import { parseDocument } from 'yaml';
import type { CatalogEntry, CatalogLoadError, WorkflowScope } from './catalogEntry';

/** Parses one definition text (YAML, of which JSON is a subset) into an entry or a named error. */
export function parseDefinitionText(
  text: string,
  where: { scope: WorkflowScope; path?: string; ribId?: string },
): { entry: CatalogEntry } | { error: CatalogLoadError } {
  const label = where.path ?? where.ribId ?? where.scope.toLowerCase();
  const doc = parseDocument(text, { prettyErrors: false });
  if (doc.errors.length) {
    return { error: { ...where, message: `${label}: not valid YAML/JSON: ${doc.errors[0]!.message.split('\n')[0]}` } };
  }
  return validated(doc.toJS(), text, where);
}

/** Validates a parsed definition (a file's, or a rib's code entry) into an entry or a named error. */
export function validated(
  raw: unknown,
  source: string,
  where: { scope: WorkflowScope; path?: string; ribId?: string; origin?: 'code' | 'yaml' },
): { entry: CatalogEntry } | { error: CatalogLoadError } {
  const label = where.path ?? (where.ribId ? `rib ${where.ribId}` : where.scope.toLowerCase());
  const parsed = parseWorkflowDefinition(raw);
  if (!parsed.ok) return { error: { scope: where.scope, path: where.path, ribId: where.ribId, message: `${label}: ${parsed.error}` } };
  return { entry: { name: parsed.definition.name, definition: parsed.definition, source, ...where } };
}

type Parsed = ReturnType<typeof parseDefinitionText>;

/**
 * What files parsed to, by scope and path, with the text each was parsed from. A catalog read still
 * lists and reads every file (so an edit applies to the next read), but parses and validates only a
 * file whose text changed: a result is a function of the text, scope and path alone.
 */
export class ParsedFiles {
  private readonly byFile = new Map<string, { text: string; parsed: Parsed }>();

  parse(text: string, scope: WorkflowScope, path: string): Parsed {
    const key = `${scope}\u0000${path}`;
    const hit = this.byFile.get(key);
    if (hit?.text === text) return hit.parsed;
    const parsed = parseDefinitionText(text, { scope, path });
    this.byFile.set(key, { text, parsed });
    return parsed;
  }

  /** Forgets the files of `dir` (in `scope`) other than `kept`: removed files are not held. */
  prune(scope: WorkflowScope, dir: string, kept: ReadonlySet<string>): void {
    const prefix = `${scope}\u0000${join(dir, sep)}`;
    for (const key of this.byFile.keys()) {
      if (key.startsWith(prefix) && !kept.has(key.slice(scope.length + 1))) this.byFile.delete(key);
    }
  }
}

/**
 * Every `*.yaml`, `*.yml` and `*.json` file directly in `dir`, in file-name order. A missing folder
 * is an empty scope; two files declaring one name keep the first and report the second. With
 * `cache`, a file whose text is unchanged since the last read is not parsed again. `digest` is the
 * digest of exactly the texts read (see `workflowsDigestOf`: what a project's trust is checked
 * against), absent when a file could not be read.
 */
export async function loadWorkflowDir(
  dir: string,
  scope: WorkflowScope,
  cache?: ParsedFiles,
): Promise<{ entries: CatalogEntry[]; errors: CatalogLoadError[]; digest?: string }> {
  let names: string[];
  try {
    names = await workflowFileNames(dir);
  } catch (err) {
    return { entries: [], errors: [{ scope, path: dir, message: `${dir}: cannot be read: ${(err as Error).message}` }] };
  }
  const entries: CatalogEntry[] = [];
  const errors: CatalogLoadError[] = [];
  const paths = names.map((name) => join(dir, name));
  // Read together, taken in file-name order.
  const texts = await Promise.all(paths.map((path) => readFile(path, 'utf8').catch((err: unknown) => err as Error)));
  paths.forEach((path, i) => {
    const text = texts[i]!;
    if (text instanceof Error) {
      errors.push({ scope, path, message: `${path}: cannot be read: ${text.message}` });
      return;
    }
    const result = cache ? cache.parse(text, scope, path) : parseDefinitionText(text, { scope, path });
    if ('error' in result) errors.push(result.error);
    else {
      const earlier = entries.find((e) => e.name === result.entry.name);
      if (earlier) errors.push({ scope, path, message: `${path}: workflow "${result.entry.name}" is already defined by ${earlier.path}; this file is ignored` });
      else entries.push(result.entry);
    }
  });
  cache?.prune(scope, dir, new Set(paths));
  const read = texts.every((t) => typeof t === 'string');
  return { entries, errors, ...(read ? { digest: workflowsDigestOf(paths.map((p, i) => ({ name: basename(p), text: texts[i] as string }))) } : {}) };
}
