import { isLoopback, listOf } from '@keelson/schema';

/** Which Host names a service answers to and which browser origins may call it. */
export interface AccessPolicy {
  /** Host names (no port) answered beyond the loopback names, lower-case. */
  publicHosts: readonly string[];
  /** Browser origins (`scheme://host[:port]`) allowed beyond the service's own, lower-case. */
  allowedOrigins: readonly string[];
}

/** The policy from `KEELSON_PUBLIC_HOSTS` and `KEELSON_ALLOWED_ORIGINS`. */
export function accessPolicyFromEnv(env: { KEELSON_PUBLIC_HOSTS?: string; KEELSON_ALLOWED_ORIGINS?: string }): AccessPolicy {
  return {
    publicHosts: listOf(env.KEELSON_PUBLIC_HOSTS).map((h) => h.toLowerCase()),
    allowedOrigins: listOf(env.KEELSON_ALLOWED_ORIGINS).map((o) => o.toLowerCase().replace(/\/+$/, '')),
  };
}

/** A policy answering loopback names only, with no foreign origin (tests, defaults). */
export const loopbackOnly: AccessPolicy = { publicHosts: [], allowedOrigins: [] };

/** The host name of a `Host` header value (`name`, `name:port`, `[v6]:port`), lower-case; undefined when malformed. */
export function hostName(hostHeader: string | undefined): string | undefined {
  if (!hostHeader) return undefined;
  const value = hostHeader.trim().toLowerCase();
  const m = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?$/.exec(value);
  return m ? m[1] : undefined;
}

/**
 * Whether a request naming `hostHeader` is for this service: a loopback name (`localhost`,
 * `127.x.y.z`, `[::1]`) or one of the policy's public hosts. Anything else — above all a foreign
 * name pointed at this machine (DNS rebinding) — is refused.
 */
export function hostAllowed(hostHeader: string | undefined, policy: AccessPolicy): boolean {
  const name = hostName(hostHeader);
  if (!name) return false;
  return isLoopback(name) || policy.publicHosts.includes(name);
}

/**
 * Whether a browser request from `origin` may reach the service answering at `hostHeader`: its own
 * origin (same host and port as the request names) or one the policy allows. A request without an
 * `Origin` is not a browser's cross-site request and passes (it still needs a credential).
 */
export function originAllowed(origin: string | undefined, hostHeader: string | undefined, policy: AccessPolicy): boolean {
  if (origin === undefined) return true;
  const normalized = origin.trim().toLowerCase();
  if (policy.allowedOrigins.includes(normalized)) return true;
  let url: URL;
  try {
    url = new URL(normalized);
  } catch {
    return false;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  return hostHeader !== undefined && url.host === hostHeader.trim().toLowerCase() && hostAllowed(url.host, policy);
}

/** Whether `origin` is one the policy names explicitly (those get CORS headers). */
export function corsOrigin(origin: string | undefined, policy: AccessPolicy): string | undefined {
  if (!origin) return undefined;
  const normalized = origin.trim().toLowerCase();
  return policy.allowedOrigins.includes(normalized) ? origin.trim() : undefined;
}
