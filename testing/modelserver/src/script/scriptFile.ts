import { readFileSync, statSync } from 'node:fs';
import { describeZodError as describeIssues } from '@keelson/schema';
import { scriptSchema, type Rule } from './rule';

/** Parses a script (a JSON list of rules, or `{ "rules": [...] }`), naming the first bad field. */
export function parseScript(json: unknown, source: string): Rule[] {
  const result = scriptSchema.safeParse(json);
  if (!result.success) throw new Error(`script ${source} is invalid: ${describeIssues(result.error, 'rules')}`);
  return result.data;
}

/**
 * The rules of a script file, read again whenever the file changes, so a long-running server
 * follows edits without a restart.
 */
export class ScriptFile {
  private mtimeMs = -1;
  private cached: Rule[] = [];

  constructor(readonly path: string) {}

  /** @throws when the file cannot be read or is not a valid script, naming the file and the field. */
  rules(): Rule[] {
    let mtimeMs: number;
    try {
      mtimeMs = statSync(this.path).mtimeMs;
    } catch (err) {
      throw new Error(`script ${this.path} cannot be read: ${(err as Error).message}`);
    }
    if (mtimeMs !== this.mtimeMs) {
      let json: unknown;
      try {
        json = JSON.parse(readFileSync(this.path, 'utf8'));
      } catch (err) {
        throw new Error(`script ${this.path} is not JSON: ${(err as Error).message}`);
      }
      this.cached = parseScript(json, this.path);
      this.mtimeMs = mtimeMs;
    }
    return this.cached;
  }
}
