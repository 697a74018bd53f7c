import { sandboxEnv } from '@keelson/platform';

/** The environment Bash and Grep start from: the platform's `sandboxEnv` allowlist of the host's (no mesh configuration, no credentials). */
export function commandEnv(env: Record<string, string | undefined>): Record<string, string> {
  return sandboxEnv(env);
}
