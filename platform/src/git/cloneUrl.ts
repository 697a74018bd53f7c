import { lookup as dnsLookup } from 'node:dns/promises';
import { isIPv6 } from 'node:net';
import { MeshError } from '@keelson/schema';
import type { GitCredentials } from './gitHardening';
import { isPrivateAddress, looseIPv4 } from './privateAddress';

/** A clone URL the mesh accepts, split into what git needs. */
export interface CloneUrl {
  protocol: 'https' | 'ssh';
  /** The host git connects to: lower-case name or IP literal, without brackets. */
  host: string;
  port: number | null;
  /**
   * What git clones from and what the clone keeps as its `origin`: never a password, and for https
   * no user either (an https "user" is often a token).
   */
  remote: string;
  /** https userinfo: used for the clone, never stored, logged or echoed. */
  credentials?: GitCredentials;
}

/**
 * Which non-public hosts a clone may reach (`KEELSON_GIT_ALLOW_PRIVATE_HOSTS`): `true` for any, or
 * host names / IP literals, compared case-insensitively with the URL's host.
 */
export type PrivateHostsAllowance = true | readonly string[];

/** Resolves a host name to its addresses (the C library's resolver by default, as git's is). */
export type HostLookup = (host: string) => Promise<string[]>;

const defaultLookup: HostLookup = async (host) => (await dnsLookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** Removes credentials from a URL-ish string before it reaches a message or a log. */
export function redactUrl(url: string): string {
  const scheme = /^([a-z][a-z0-9+.-]*:\/\/)([^/]*)/i.exec(url);
  if (scheme) {
    const at = scheme[2]!.lastIndexOf('@');
    return at < 0 ? url : `${scheme[1]}***@${url.slice(scheme[1]!.length + at + 1)}`;
  }
  const at = url.indexOf('@');
  const slash = url.indexOf('/');
  return at >= 0 && (slash < 0 || at < slash) ? `***@${url.slice(at + 1)}` : url;
}

function bad(field: string, url: string, why: string): MeshError {
  return new MeshError('BAD_USER_INPUT', `${field}: ${why}, got ${JSON.stringify(redactUrl(url))}`);
}

function decoded(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/** A part git (or ssh) would read as an option: a leading `-`, also once percent-decoded. */
function optionLike(part: string): boolean {
  return part.startsWith('-') || decoded(part).startsWith('-');
}

function normalizeHost(host: string): string {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return looseIPv4(bare) ?? bare;
}

const HOST_NAME = /^[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?\.?$/i;

function checkHost(field: string, url: string, host: string): void {
  if (!host) throw bad(field, url, 'must name a host');
  if (optionLike(host)) throw bad(field, url, 'the host must not start with "-" (git would read it as an option)');
  const bare = host.replace(/^\[|\]$/g, '');
  if (host.startsWith('[') ? !isIPv6(bare.replace(/%.*$/, '')) : !HOST_NAME.test(host)) throw bad(field, url, 'the host is not a valid host name or IP address');
}

function checkPath(field: string, url: string, path: string): void {
  if (!path || path === '/') throw bad(field, url, 'must name a repository path');
  if (optionLike(path) || optionLike(path.replace(/^\/+/, ''))) throw bad(field, url, 'the repository path must not start with "-"');
}

/**
 * Parses a clone URL: `https://[user[:password]@]host[:port]/path`, `ssh://[user@]host[:port]/path`
 * or scp-like `user@host:path`. Refuses (BAD_USER_INPUT naming `field`) any other scheme, whitespace
 * or control characters, a host, user, port or path git or ssh would read as an option
 * (`ssh://-oProxyCommand=…`), a password in an ssh URL, and a query or fragment. Pure.
 */
export function parseCloneUrl(raw: string, field = 'input.url'): CloneUrl {
  if (/[\s\u0000-\u001f\u007f]/.test(raw)) throw bad(field, raw, 'must not contain whitespace or control characters');
  if (raw.startsWith('-')) throw bad(field, raw, 'must not start with "-"');

  if (/^https:\/\//i.test(raw)) {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw bad(field, raw, 'is not a valid https URL');
    }
    if (url.search || url.hash || raw.includes('#')) throw bad(field, raw, 'must not carry a query or fragment');
    const authority = /^https:\/\/([^/]*)/i.exec(raw)![1]!;
    const hostPart = authority.slice(authority.lastIndexOf('@') + 1);
    const rawHost = hostPart.startsWith('[') ? hostPart.slice(0, hostPart.indexOf(']') + 1) : hostPart.split(':')[0]!;
    if (optionLike(rawHost)) throw bad(field, raw, 'the host must not start with "-" (git would read it as an option)');
    checkHost(field, raw, url.hostname);
    const username = decoded(url.username);
    const password = decoded(url.password);
    if (optionLike(username)) throw bad(field, raw, 'the user must not start with "-"');
    checkPath(field, raw, url.pathname);
    const clean = new URL(url.href);
    clean.username = '';
    clean.password = '';
    return {
      protocol: 'https',
      host: normalizeHost(url.hostname),
      port: url.port ? Number(url.port) : null,
      remote: clean.href,
      ...(username || password ? { credentials: { username, password } } : {}),
    };
  }

  const ssh = /^ssh:\/\/(?:([^@/]*)@)?(\[[^\]/]*\]|[^:/]*)(?::([^/]*))?(\/.*)$/i.exec(raw);
  if (ssh) {
    const [, user, host, port, path] = ssh;
    if (user !== undefined) {
      if (user.includes(':')) throw bad(field, raw, 'an ssh URL must not carry a password (ssh authenticates with keys)');
      if (!user || optionLike(user)) throw bad(field, raw, 'the user must not be empty or start with "-"');
    }
    checkHost(field, raw, host!);
    if (port !== undefined && !/^\d{1,5}$/.test(port)) throw bad(field, raw, 'the port must be a number');
    checkPath(field, raw, path!);
    return { protocol: 'ssh', host: normalizeHost(host!), port: port ? Number(port) : null, remote: raw };
  }

  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw) || /^[a-z0-9+.-]+::/i.test(raw)) throw bad(field, raw, 'must be an https:// or ssh repository URL');
  const scp = /^([^@/:]+)@(\[[^\]/]*\]|[^:/[\]]+):(.+)$/.exec(raw);
  if (!scp) throw bad(field, raw, 'must be an https:// or ssh repository URL');
  const [, user, host, path] = scp;
  if (optionLike(user!)) throw bad(field, raw, 'the user must not start with "-"');
  checkHost(field, raw, host!);
  if (path!.startsWith('//')) throw bad(field, raw, 'must be an https:// or ssh repository URL');
  checkPath(field, raw, path!);
  return { protocol: 'ssh', host: normalizeHost(host!), port: null, remote: raw };
}

/**
 * Refuses (BAD_USER_INPUT) a host that is, or resolves to, a loopback, private, link-local or other
 * non-public address, unless `allowPrivateHosts` allows it; a name that does not resolve is
 * UPSTREAM_FAILED. Resolves with the addresses checked (an https clone pins git to them).
 */
export async function checkCloneHost(
  url: CloneUrl,
  opts: { allowPrivateHosts?: PrivateHostsAllowance; lookup?: HostLookup; field?: string },
): Promise<string[]> {
  const field = opts.field ?? 'input.url';
  const literal = looseIPv4(url.host) ?? (isIPv6(url.host.replace(/%.*$/, '')) ? url.host : null);
  let addresses: string[];
  if (literal) addresses = [literal];
  else {
    try {
      addresses = await (opts.lookup ?? defaultLookup)(url.host);
    } catch (err) {
      throw new MeshError('UPSTREAM_FAILED', `${field}: cannot resolve host ${url.host}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    if (!addresses.length) throw new MeshError('UPSTREAM_FAILED', `${field}: host ${url.host} resolves to no address`);
  }
  const allowance = opts.allowPrivateHosts ?? [];
  const allowed = allowance === true || allowance.some((h) => normalizeHost(h) === url.host);
  if (!allowed) {
    const privateOne = addresses.find(isPrivateAddress);
    if (privateOne) {
      const how = literal ? '' : ` (it resolves to ${privateOne})`;
      throw new MeshError(
        'BAD_USER_INPUT',
        `${field}: host ${url.host}${how} is a loopback, private or link-local address; clones reach public hosts only unless KEELSON_GIT_ALLOW_PRIVATE_HOSTS allows it`,
      );
    }
  }
  return addresses;
}

/** `http.curloptResolve` value pinning an https clone to the addresses its host was checked at. */
export function curlResolvePin(url: CloneUrl, addresses: readonly string[]): string | null {
  if (url.protocol !== 'https' || !addresses.length) return null;
  const port = url.port ?? 443;
  const host = url.host.includes(':') ? `[${url.host}]` : url.host;
  return `${host}:${port}:${addresses.map((a) => (a.includes(':') ? `[${a}]` : a)).join(',')}`;
}
