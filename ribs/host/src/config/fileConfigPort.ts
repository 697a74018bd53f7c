import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeZodError } from '@keelson/schema';
import { parse as parseYaml } from 'yaml';
import { errorMessage } from '../errors';
import type { WarningSink } from '../warnings';
import type { ConfigPort } from './configPort';
import { resolveEnvRefs } from './envRefs';
import { keelsonConfigSchema, type KeelsonConfig } from './keelsonConfig';

/** The file names the config is read from, in precedence order. */
export const CONFIG_FILE_NAMES = ['config.json', 'config.yaml', 'config.yml'] as const;

/** What reading the config file found; `ignored` names other config files present but shadowed. */
export type ConfigFileRead =
  | { ok: true; config: KeelsonConfig; path?: string; ignored: string[] }
  | { ok: false; path: string; problem: string };

/**
 * Reads `<home>/config.json`, else `config.yaml`, else `config.yml`, resolves `${VAR}` and
 * `${VAR:-default}` in its string values from `env`, and validates it. No file reads as `{}`; a file
 * that cannot be read, parsed or validated is reported, not thrown.
 * @throws UnresolvedConfigVariableError when it uses a variable that is unset and has no default: the
 * file says it needs that value, so the process must not start without it
 */
export function readConfigFile(home: string, env: NodeJS.ProcessEnv = process.env): ConfigFileRead {
  const present: { path: string; text: string }[] = [];
  for (const name of CONFIG_FILE_NAMES) {
    const path = join(home, name);
    try {
      present.push({ path, text: readFileSync(path, 'utf8') });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return { ok: false, path, problem: errorMessage(err) };
    }
  }
  const [first, ...rest] = present;
  if (!first) return { ok: true, config: {}, ignored: [] };
  const isJson = first.path.endsWith('.json');
  let raw: unknown;
  try {
    raw = isJson ? JSON.parse(first.text) : parseYaml(first.text);
  } catch (err) {
    return { ok: false, path: first.path, problem: `not valid ${isJson ? 'JSON' : 'YAML'}: ${errorMessage(err)}` };
  }
  const parsed = keelsonConfigSchema.safeParse(resolveEnvRefs(raw ?? {}, env, first.path));
  if (!parsed.success) return { ok: false, path: first.path, problem: describeZodError(parsed.error, 'config') };
  return { ok: true, config: parsed.data, path: first.path, ignored: rest.map((file) => file.path) };
}

/**
 * The config file under `home`, read on each `load()`. An unreadable or invalid file never blocks
 * boot: it is warned about and read as `{}` (no grants, so the cross-rib gate stays closed). A
 * variable it needs and the environment lacks does (see {@link readConfigFile}). When
 * several exist, JSON wins and the others are named in a warning.
 */
export function fileConfigPort(home: string, warn?: WarningSink): ConfigPort {
  return {
    load() {
      const read = readConfigFile(home);
      if (!read.ok) {
        warn?.({ stage: 'activation', rule: 'config-file', message: `ignoring ${read.path}: ${read.problem}` });
        return {};
      }
      if (read.ignored.length > 0) {
        warn?.({ stage: 'activation', rule: 'config-file', message: `using ${read.path}; ignoring ${read.ignored.join(', ')}` });
      }
      return read.config;
    },
  };
}
