import { z } from 'zod';

/**
 * The scopes a credential can carry (CONTRACT "Identity and access"):
 * - `read`    queries and subscriptions;
 * - `write`   projects, rib actions, memory;
 * - `operate` runs, ops, sessions, tasks, swarms, approvals;
 * - `admin`   tokens, trust, credentials, server lifecycle.
 * `admin` implies every other scope; `write` and `operate` each imply `read` (see {@link effectiveScopes}).
 */
export const scopes = ['read', 'write', 'operate', 'admin'] as const;
export type Scope = (typeof scopes)[number];
export const scopeSchema = z.enum(scopes, { error: `expected one of ${scopes.join(', ')}` });

/** Who a credential stands for: an API token, a JWT of the identity provider, or a mesh service. */
export const callerKinds = ['token', 'jwt', 'service'] as const;
export type CallerKind = (typeof callerKinds)[number];

/** The authenticated caller of one request, as the gateway asserts it to subgraphs. */
export interface Caller {
  /** `token:<name>` for an API token, the JWT's `sub`, `service:<name>` for a mesh service. */
  subject: string;
  kind: CallerKind;
  /** Effective scopes (implications applied). */
  scopes: Scope[];
  /** The API token's id, when the caller used one (revocation closes its sockets). */
  tokenId?: string;
}

export const callerSchema = z.strictObject({
  subject: z.string().min(1).max(512),
  kind: z.enum(callerKinds),
  scopes: z.array(scopeSchema).max(scopes.length),
  tokenId: z.string().min(1).max(64).optional(),
});

/**
 * The stable key of a caller, for whatever is kept per caller (idempotency results, socket counts,
 * revocation): an API token's id (`token:<id>`: a second token with the same name is another caller),
 * otherwise the kind and subject (`jwt:<sub>` — the one configured issuer's —, `service:<name>`), so a
 * JWT whose `sub` reads `token:<name>` is never taken for that token.
 */
export function callerKey(caller: Pick<Caller, 'kind' | 'subject' | 'tokenId'>): string {
  return caller.tokenId ? `token:${caller.tokenId}` : `${caller.kind}:${caller.subject}`;
}

/** Who did something, as events and approvals record it (`actor { subject kind }`). */
export interface Actor {
  subject: string;
  kind: CallerKind;
}

/** The actor of a caller. */
export function actorOf(caller: Caller): Actor {
  return { subject: caller.subject, kind: caller.kind };
}

/** The scopes a granted set stands for: `admin` implies all; `write` and `operate` imply `read`. */
export function effectiveScopes(granted: readonly Scope[]): Scope[] {
  const set = new Set<Scope>(granted);
  if (set.has('admin')) return [...scopes];
  if (set.has('write') || set.has('operate')) set.add('read');
  return scopes.filter((s) => set.has(s));
}

/**
 * Whether `held` satisfies a federation `@requiresScopes(scopes:)` requirement: an OR of AND-sets
 * (`[["a","b"],["c"]]` = a and b, or c). An empty requirement is satisfied by any caller.
 */
export function satisfiesScopes(held: readonly string[], requirement: readonly (readonly string[])[]): boolean {
  if (requirement.length === 0) return true;
  const have = new Set(held);
  return requirement.some((all) => all.every((s) => have.has(s)));
}

/** The request header carrying the gateway's signed assertion of the caller to a subgraph. */
export const ASSERTION_HEADER = 'x-keelson-assertion';
/** The graphql-ws `connection_init` payload key carrying the same assertion to a subgraph. */
export const ASSERTION_PARAM = 'assertion';
/** Where MCP (Streamable HTTP) is served: the gateway's origin, and the ribs subgraph behind it. */
export const MCP_PATH = '/mcp';
/** Where uploads are taken (`POST ?name=<filename>[&mime=<type>]`): the gateway's origin, and the sessions subgraph behind it. */
export const UPLOADS_PATH = '/api/uploads';

/**
 * graphql-ws close codes the mesh uses beyond graphql-ws's own (schema/PROTOCOL.md "Authentication"
 * and "Limits"): 4401 no or bad credential (also a revoked or expired token's open socket); 4403 a
 * subgraph socket used for anything but subscriptions; 4429 too many connections for one
 * credential; 1013 a slow consumer whose queue overflowed (reconnect and resume from the last cursor).
 */
export const closeCodes = { unauthenticated: 4401, forbidden: 4403, tooManyConnections: 4429, slowConsumer: 1013 } as const;
