import { readdirSync, readFileSync } from 'node:fs';
import { basename, extname, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { errorMessage } from '../errors';
import type { WarningSink } from '../warnings';
import type { RibWorkflowFile } from './ribCandidate';

/** The folder at a rib package's root holding static YAML workflows. */
export const RIB_WORKFLOWS_DIR = 'workflows';

/**
 * Reads `<packageDir>/workflows/*.yaml|*.yml` in name order. A file that does not parse to a YAML
 * mapping is warned about and skipped; the rib itself stays.
 */
export function loadWorkflowFiles(packageDir: string, ribId: string, warn: WarningSink): RibWorkflowFile[] {
  const dir = join(packageDir, RIB_WORKFLOWS_DIR);
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => /\.ya?ml$/i.test(name)).sort();
  } catch {
    return [];
  }
  const files: RibWorkflowFile[] = [];
  for (const fileName of names) {
    const path = join(dir, fileName);
    try {
      const text = readFileSync(path, 'utf8');
      const definition: unknown = parseYaml(text);
      if (typeof definition !== 'object' || definition === null || Array.isArray(definition)) {
        throw new Error('the document is not a mapping');
      }
      const declared = (definition as { name?: unknown }).name;
      const description = (definition as { description?: unknown }).description;
      files.push({
        path,
        text,
        definition,
        name: typeof declared === 'string' && declared.trim() !== '' ? declared.trim() : basename(fileName, extname(fileName)),
        ...(typeof description === 'string' ? { description } : {}),
      });
    } catch (err) {
      warn({ stage: 'discovery', rule: 'workflow-file', ribId, message: `skipping workflow file ${path}: ${errorMessage(err)}` });
    }
  }
  return files;
}
