/**
 * Variables a sandboxed process may inherit from the process that starts it: where programs and
 * toolchains are, who and where the user is, language and terminal. Nothing else passes — the
 * mesh's own configuration (`DATABASE_URL`, `TEMPORAL_*`, `KEELSON_*`), credentials and model API
 * keys never do; callers add back, explicitly, what a command needs.
 */
export const SANDBOX_ENV_ALLOWED: readonly (string | RegExp)[] = [
  'PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LANGUAGE', /^LC_[A-Z_]+$/, 'TZ',
  'TERM', 'COLORTERM', 'NO_COLOR', 'EDITOR', 'VISUAL', 'PAGER',
  'GIT_AUTHOR_NAME', 'GIT_AUTHOR_EMAIL', 'GIT_COMMITTER_NAME', 'GIT_COMMITTER_EMAIL', 'GIT_CONFIG_NOSYSTEM',
  'GOPATH', 'GOROOT', 'GOCACHE', 'GOMODCACHE', 'CARGO_HOME', 'RUSTUP_HOME', 'JAVA_HOME', 'NVM_DIR', 'NODE_PATH', 'PYENV_ROOT', 'VIRTUAL_ENV',
  'SSL_CERT_FILE', 'SSL_CERT_DIR', 'NODE_EXTRA_CA_CERTS',
];

/**
 * Names that mark a credential or the mesh's own wiring; dropped even when allowed above (defence
 * in depth) and when a caller passes variables through {@link sandboxEnv}'s `extra`.
 */
const SECRET_NAME =
  /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|COOKIE|(?:^|_)AUTH(?:$|_|ORIZATION)|DATABASE_URL|^PG[A-Z]*$|^TEMPORAL_|^KEELSON_|^AWS_|^AZURE_|^GOOGLE_|^GCP_|^GH_|^GITHUB_|^NPM_CONFIG_|^SSH_/i;

/** True for a variable name that marks a credential or the mesh's own wiring (never passed into a sandbox). */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}

function allowed(name: string): boolean {
  return SANDBOX_ENV_ALLOWED.some((rule) => (typeof rule === 'string' ? rule === name : rule.test(name)));
}

/**
 * The environment a sandboxed process starts from: only the {@link SANDBOX_ENV_ALLOWED} variables of
 * `env`, never one whose name marks a secret ({@link isSecretName}). `extra` is added on top by name
 * (a caller's explicit choice) under the same secret-name rule; set what a command must receive
 * regardless of its name (a CLI's own API key) after this call.
 */
export function sandboxEnv(env: Record<string, string | undefined>, extra: readonly string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (typeof value !== 'string' || isSecretName(name)) continue;
    if (allowed(name) || extra.includes(name)) out[name] = value;
  }
  return out;
}
