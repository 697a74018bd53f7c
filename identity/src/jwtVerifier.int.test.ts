import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type KeyLike } from 'jose';
import { JwtVerifier } from './jwtVerifier';

// A real JWKS endpoint on loopback serving the public half of a key pair made here.
const issuer = 'https://idp.keelson.test/';
const audience = 'keelson-mesh';
let server: Server;
let jwksUrl: string;
let key: KeyLike;

beforeAll(async () => {
  const pair = await generateKeyPair('RS256');
  key = pair.privateKey;
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

const now = () => Math.floor(Date.now() / 1000);
function sign(opts: { exp?: number; iat?: number | false }): Promise<string> {
  let jwt = new SignJWT({ scope: 'read' }).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setIssuer(issuer).setAudience(audience).setSubject('alice');
  if (opts.iat !== false) jwt = jwt.setIssuedAt(opts.iat ?? now());
  if (opts.exp !== undefined) jwt = jwt.setExpirationTime(opts.exp);
  return jwt.sign(key);
}

describe('JWT lifetimes', () => {
  it('refuses a JWT without exp (it would be accepted forever)', async () => {
    const verifier = new JwtVerifier({ jwksUrl, issuer, audience });
    await expect(verifier.verify(await sign({}))).rejects.toMatchObject({ code: 'UNAUTHENTICATED', message: 'the JWT is not accepted: it has no expiry (exp)' });
  });

  it('refuses one that lives longer than the maximum (a day by default, KEELSON_JWT_MAX_LIFETIME_S), with or without iat', async () => {
    const verifier = new JwtVerifier({ jwksUrl, issuer, audience });
    await expect(verifier.verify(await sign({ exp: now() + 300 }))).resolves.toMatchObject({ subject: 'alice', kind: 'jwt' });
    await expect(verifier.verify(await sign({ exp: now() + 2 * 86_400 }))).rejects.toMatchObject({ message: expect.stringMatching(/lives longer than 86400 s/) });
    await expect(verifier.verify(await sign({ exp: now() + 2 * 86_400, iat: false }))).rejects.toMatchObject({ message: expect.stringMatching(/lives longer than 86400 s/) });
    const lenient = new JwtVerifier({ jwksUrl, issuer, audience, maxLifetimeSeconds: 3 * 86_400 });
    await expect(lenient.verify(await sign({ exp: now() + 2 * 86_400 }))).resolves.toMatchObject({ subject: 'alice' });
  });
});
