import { readdir, readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { parseWorkflowDefinition } from '@keelson/schema';
import { parseDocument } from 'yaml';
import type { CatalogEntry, CatalogLoadError, WorkflowScope } from './catalogEntry';

const EXTENSIONS = new Set(['.yaml', '.yml', '.json']);

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

/**
 * Every `*.yaml`, `*.yml` and `*.json` file directly in `dir`, in file-name order. A missing folder
 * is an empty scope; two files declaring one name keep the first and report the second.
 */
export async function loadWorkflowDir(dir: string, scope: WorkflowScope): Promise<{ entries: CatalogEntry[]; errors: CatalogLoadError[] }> {
  let names: string[];
  try {
    names = (await readdir(dir, { withFileTypes: true })).filter((d) => d.isFile() && EXTENSIONS.has(extname(d.name).toLowerCase())).map((d) => d.name).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return { entries: [], errors: [] };
    return { entries: [], errors: [{ scope, path: dir, message: `${dir}: cannot be read: ${(err as Error).message}` }] };
  }
  const entries: CatalogEntry[] = [];
  const errors: CatalogLoadError[] = [];
  for (const name of names) {
    const path = join(dir, name);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      errors.push({ scope, path, message: `${path}: cannot be read: ${(err as Error).message}` });
      continue;
    }
    const result = parseDefinitionText(text, { scope, path });
    if ('error' in result) errors.push(result.error);
    else {
      const earlier = entries.find((e) => e.name === result.entry.name);
      if (earlier) errors.push({ scope, path, message: `${path}: workflow "${result.entry.name}" is already defined by ${earlier.path}; this file is ignored` });
      else entries.push(result.entry);
    }
  }
  return { entries, errors };
}
