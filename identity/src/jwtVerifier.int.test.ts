import { startIdentityProvider, type IdentityProvider } from '../../test/support/identityProvider';
import { JwtVerifier } from './jwtVerifier';

// A real JWKS endpoint on loopback serving the public half of a key pair made here.
let idp: IdentityProvider;
let jwksUrl: string;
let issuer: string;
let audience: string;

beforeAll(async () => {
  idp = await startIdentityProvider();
  ({ url: jwksUrl, issuer, audience } = idp);
});
afterAll(() => idp.stop());

const now = () => Math.floor(Date.now() / 1000);
function sign(opts: { exp?: number; iat?: number | false }): Promise<string> {
  let jwt = idp.token({ scope: 'read' }).setSubject('alice');
  if (opts.iat !== false) jwt = jwt.setIssuedAt(opts.iat ?? now());
  if (opts.exp !== undefined) jwt = jwt.setExpirationTime(opts.exp);
  return jwt.sign(idp.key);
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
