import { homedir } from 'node:os';
import { join } from 'node:path';
import { createSandbox, sandboxEnv, type ProcessSandbox } from '@keelson/platform';
import { keelsonHome, type MeshEnv } from '@keelson/schema';

/** What the drivers need from the environment (resolved once by {@link harnessSettings}). */
export interface HarnessSettings {
  /** The mesh's state folder: each CLI runs with its own HOME and config under `<home>/harness/<id>/`. */
  keelsonHome: string;
  /** The model endpoint every CLI calls (KEELSON_MODEL_BASE_URL), without a trailing slash; null = vendor defaults. */
  modelBaseUrl: string | null;
  /** The key every CLI sends (KEELSON_MODEL_API_KEY). */
  apiKey: string;
  /** The model every CLI asks for (KEELSON_HARNESS_MODEL); null = each driver's default. */
  model: string | null;
  /** Longest a turn may run before its group is killed. @default 1800000 */
  turnTimeoutMs: number;
  /** PATH the CLIs run with, and where binaries not installed from npm are looked for. */
  path: string;
  /** How long a turn's lease lives without renewal; renewed every second while the turn runs. @default 15000 */
  leaseMs: number;
  /** SIGTERM → SIGKILL grace when a turn is interrupted. @default 2000 */
  killGraceMs: number;
  /** What every CLI's environment starts from: the platform's `sandboxEnv` allowlist of the process's (no mesh configuration, no credentials). */
  inheritedEnv: Record<string, string>;
  /** The bubblewrap sandbox every turn's CLI runs in (KEELSON_SANDBOX; the keelson home hidden but for the CLI's own folder). */
  sandbox: ProcessSandbox;
  /** Files staged by `POST /api/uploads` (`<home>/.data/uploads`), their size cap and age (KEELSON_UPLOAD_MAX_BYTES / _AGE_S). */
  uploads: { dir: string; maxBytes: number; maxAgeS: number };
}

/** The drivers' settings from parsed env. */
export function harnessSettings(e: MeshEnv, rawEnv: Record<string, string | undefined> = process.env, userHome = homedir()): HarnessSettings {
  const home = keelsonHome(e, userHome);
  return {
    keelsonHome: home,
    modelBaseUrl: e.KEELSON_MODEL_BASE_URL ? e.KEELSON_MODEL_BASE_URL.replace(/\/+$/, '') : null,
    apiKey: e.KEELSON_MODEL_API_KEY,
    model: e.KEELSON_HARNESS_MODEL ?? null,
    turnTimeoutMs: e.KEELSON_HARNESS_TURN_TIMEOUT_MS,
    path: rawEnv.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    leaseMs: 15_000,
    killGraceMs: 2000,
    inheritedEnv: sandboxEnv(rawEnv),
    sandbox: createSandbox({ mode: e.KEELSON_SANDBOX, hidden: [home] }),
    uploads: { dir: join(home, '.data', 'uploads'), maxBytes: e.KEELSON_UPLOAD_MAX_BYTES, maxAgeS: e.KEELSON_UPLOAD_MAX_AGE_S },
  };
}
