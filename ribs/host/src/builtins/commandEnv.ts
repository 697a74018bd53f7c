/** Environment variables a built-in's process never inherits: credentials of the process hosting the turn. */
const SECRET_ENV = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|DATABASE_URL|^PG|AUTH_SOCK/i;

/** The environment Bash and Grep run with: the host's, without variables whose names mark credentials. */
export function commandEnv(env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (typeof value === 'string' && !SECRET_ENV.test(name)) out[name] = value;
  return out;
}
