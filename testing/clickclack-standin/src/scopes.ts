/**
 * Scope bundles, expanded when a bot token is minted (SWARM.md §1.2). `bot:write` expands to exactly
 * the list observed on a real server; `agent_activity:write` is granted only when named.
 */
const READ = ['channels:read', 'dms:read', 'messages:read', 'profile:read', 'realtime:read', 'threads:read', 'workspaces:read'];
const WRITE = [...READ, 'commands:write', 'dms:write', 'messages:write', 'threads:write', 'uploads:write'];
const ADMIN = [...WRITE, 'channels:write'];

export const SCOPE_BUNDLES: Readonly<Record<string, readonly string[]>> = {
  'bot:read': READ,
  'bot:write': WRITE,
  'bot:admin': ADMIN,
};

/** Every scope a token may hold once expanded. */
export const KNOWN_SCOPES: ReadonlySet<string> = new Set([...ADMIN, 'agent_activity:write']);

/** Expands bundles into their scopes (sorted, unique); undefined names the first unknown scope. */
export function expandScopes(requested: readonly string[]): { scopes: string[] } | { unknown: string } {
  const out = new Set<string>();
  for (const scope of requested) {
    const bundle = SCOPE_BUNDLES[scope];
    if (bundle) bundle.forEach((s) => out.add(s));
    else if (KNOWN_SCOPES.has(scope)) out.add(scope);
    else return { unknown: scope };
  }
  return { scopes: [...out].sort() };
}
