import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseEnv } from "node:util";

/** What {@link loadDotEnv} did. */
export interface DotEnvResult {
  /** The file it looked for; undefined when `KEELSON_ENV_FILE` is set empty (no file at all). */
  file: string | undefined;
  /** Whether that file existed and was read. */
  loaded: boolean;
  /** The variables it set: those the file names and the real environment does not (values never listed). */
  applied: string[];
}

/**
 * Reads `.env` (or the file `KEELSON_ENV_FILE` names; set it empty to read none) into `env`, the real
 * environment first: a variable already set, even to an empty string, keeps its value. A missing
 * file is not an error (the embedded defaults apply); an unreadable one is. Every `apps/*` entry calls
 * it before reading its configuration, so `.env.example` copied to `.env` takes effect.
 */
export function loadDotEnv(
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): DotEnvResult {
  const named = env.KEELSON_ENV_FILE;
  if (named !== undefined && named.trim() === "")
    return { file: undefined, loaded: false, applied: [] };
  const file = resolve(cwd, named ?? ".env");
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT" && named === undefined)
      return { file, loaded: false, applied: [] };
    throw new Error(
      `cannot read the environment file ${file}: ${(err as Error).message}`,
    );
  }
  const applied: string[] = [];
  for (const [key, value] of Object.entries(parseEnv(text))) {
    if (env[key] !== undefined) continue;
    env[key] = value;
    applied.push(key);
  }
  return { file, loaded: true, applied };
}
