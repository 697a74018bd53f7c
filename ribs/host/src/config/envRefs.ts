import { MeshError } from '@keelson/schema';

/** A `${NAME}` or `${NAME:-default}` reference; `$${` is a literal `${`. */
const REF = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** A config file names a variable that is not set and gives no default: the start stops here. */
export class UnresolvedConfigVariableError extends MeshError {
  constructor(
    readonly variable: string,
    readonly path: string,
    readonly at: string,
  ) {
    super('BAD_USER_INPUT', `${path}: ${at} uses \${${variable}}, which is not set and has no default (write \${${variable}:-<default>} to give one)`, { variable, path, at });
  }
}

function resolveString(text: string, env: NodeJS.ProcessEnv, onMissing: (name: string) => never): string {
  return text.replace(REF, (whole: string, name: string | undefined, fallback: string | undefined) => {
    if (whole === '$${') return '${';
    const value = env[name!];
    // As in a shell: `:-` takes the default when the variable is unset or empty.
    if (value !== undefined && value !== '') return value;
    if (fallback !== undefined) return fallback;
    if (value === '') return '';
    return onMissing(name!);
  });
}

/**
 * The parsed config with every `${NAME}` and `${NAME:-default}` in its string values replaced from
 * `env` (seed 002: "YAML with ${ENV_VAR} resolution"), before validation. Keys are left as written.
 * @throws UnresolvedConfigVariableError for a variable that is unset and has no default, naming the file and the key
 */
export function resolveEnvRefs(value: unknown, env: NodeJS.ProcessEnv, path: string, at = 'config'): unknown {
  if (typeof value === 'string') {
    return resolveString(value, env, (name) => {
      throw new UnresolvedConfigVariableError(name, path, at);
    });
  }
  if (Array.isArray(value)) return value.map((item, i) => resolveEnvRefs(item, env, path, `${at}[${i}]`));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, resolveEnvRefs(item, env, path, `${at}.${key}`)]));
  }
  return value;
}
