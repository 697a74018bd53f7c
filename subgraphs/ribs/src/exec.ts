import type { RibExec } from '@keelson/ribs-contract';

/**
 * A `RibExec` whose processes inherit `env` (the mesh's environment, which in-process embedders and
 * tests set apart from `process.env`), under whatever a call adds.
 */
export function execWithEnv(base: RibExec, env: Record<string, string | undefined>): RibExec {
  const overlay: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (typeof value === 'string') overlay[key] = value;
  return {
    runJSON: (cmd, args, opts) => base.runJSON(cmd, args, { ...opts, env: { ...overlay, ...opts?.env } }),
    runText: (cmd, args, opts) => base.runText(cmd, args, { ...opts, env: { ...overlay, ...opts?.env } }),
  };
}
