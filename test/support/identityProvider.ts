import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type KeyLike } from 'jose';

/** A JWT issuer for tests: a real JWKS endpoint on loopback serving the public half of a key pair made here. */
export interface IdentityProvider {
  /** The JWKS URL (KEELSON_JWT_JWKS_URL). */
  readonly url: string;
  readonly issuer: string;
  readonly audience: string;
  /** The key id the endpoint publishes and `token()` puts in the header. */
  readonly kid: string;
  /**
   * A JWT under construction with this provider's header, issuer and audience set (each may be
   * overridden by a later setter): claims, subject, iat and exp are the caller's. Sign it with `key`
   * (a foreign key for a JWT the endpoint cannot vouch for).
   */
  token(payload?: Record<string, unknown>): SignJWT;
  /** The private half of the published key. */
  readonly key: KeyLike;
  stop(): Promise<void>;
}

export async function startIdentityProvider(opts: { issuer?: string; audience?: string; kid?: string } = {}): Promise<IdentityProvider> {
  const issuer = opts.issuer ?? 'https://idp.keelson.test/';
  const audience = opts.audience ?? 'keelson-mesh';
  const kid = opts.kid ?? 'test-key';
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' }] });
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(jwks));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`,
    issuer,
    audience,
    kid,
    key: privateKey,
    token: (payload = {}) => new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid }).setIssuer(issuer).setAudience(audience),
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
