import { generateKeyPair } from 'jose';
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

describe('JWT refusals and scopes', () => {
  const verifier = () => new JwtVerifier({ jwksUrl, issuer, audience });
  /** A JWT of the loopback provider, valid five minutes, with these claims and a subject unless given. */
  const jwt = (payload: Record<string, unknown>, edit: (j: ReturnType<IdentityProvider['token']>) => ReturnType<IdentityProvider['token']> = (j) => j) =>
    edit(idp.token(payload).setIssuedAt().setExpirationTime(now() + 300)).sign(idp.key);
  const refused = (why: string) => ({ code: 'UNAUTHENTICATED', message: `the JWT is not accepted: ${why}` });

  it('says which check failed: expiry, audience, issuer, signature, subject', async () => {
    const v = verifier();
    await expect(v.verify(await jwt({ scope: 'read', sub: 'a' }, (j) => j.setExpirationTime(now() - 60)))).rejects.toMatchObject(refused('it has expired'));
    await expect(v.verify(await jwt({ scope: 'read', sub: 'a' }, (j) => j.setAudience('someone-else')))).rejects.toMatchObject(refused('claim check failed (unexpected "aud" claim value)'));
    await expect(v.verify(await jwt({ scope: 'read', sub: 'a' }, (j) => j.setIssuer('https://evil.example/')))).rejects.toMatchObject(refused('claim check failed (unexpected "iss" claim value)'));
    const { privateKey: stranger } = await generateKeyPair('RS256');
    const foreign = await idp.token({ scope: 'read', sub: 'a' }).setIssuedAt().setExpirationTime(now() + 300).sign(stranger);
    await expect(v.verify(foreign)).rejects.toMatchObject(refused('its signature does not verify'));
    const unknownKid = await idp.token({ scope: 'read', sub: 'a' }).setProtectedHeader({ alg: 'RS256', kid: 'nobody' }).setIssuedAt().setExpirationTime(now() + 300).sign(idp.key);
    await expect(v.verify(unknownKid)).rejects.toMatchObject(refused('its signature does not verify'));
    await expect(v.verify('not.a.jwt')).rejects.toMatchObject({ code: 'UNAUTHENTICATED', message: expect.stringMatching(/^the JWT is not accepted: (?!its signature|claim check|it has)/) });
    await expect(v.verify(await jwt({ scope: 'read' }))).rejects.toMatchObject(refused('it has no subject'));
    await expect(v.verify(await jwt({ scope: 'read', sub: '' }))).rejects.toMatchObject(refused('it has no subject'));
  });

  it('takes a lifetime of exactly the maximum, refuses one second more', async () => {
    const v = new JwtVerifier({ jwksUrl, issuer, audience, maxLifetimeSeconds: 600 });
    const iat = now();
    await expect(v.verify(await jwt({ scope: 'read', sub: 'a' }, (j) => j.setIssuedAt(iat).setExpirationTime(iat + 600)))).resolves.toMatchObject({ subject: 'a' });
    await expect(v.verify(await jwt({ scope: 'read', sub: 'a' }, (j) => j.setIssuedAt(iat).setExpirationTime(iat + 601)))).rejects.toMatchObject(refused('it lives longer than 600 s (KEELSON_JWT_MAX_LIFETIME_S)'));
  });

  it('reads mesh scopes from a space-separated claim or an array, ignoring anything else; none is refused, naming the claim', async () => {
    await expect(verifier().verify(await jwt({ sub: 'a', scope: 'openid  read\twrite profile' }))).resolves.toEqual({ subject: 'a', kind: 'jwt', scopes: ['read', 'write'] });
    const scp = new JwtVerifier({ jwksUrl, issuer, audience, scopeClaim: 'scp' });
    await expect(scp.verify(await jwt({ sub: 'a', scp: ['operate', 7, 'openid', null] }))).resolves.toEqual({ subject: 'a', kind: 'jwt', scopes: ['read', 'operate'] });
    await expect(scp.verify(await jwt({ sub: 'a', scp: 'write', scope: 'read' }))).resolves.toMatchObject({ scopes: ['read', 'write'] });
    await expect(scp.verify(await jwt({ sub: 'a', scope: 'read' }))).rejects.toMatchObject(refused('its "scp" claim grants none of read, write, operate, admin'));
    await expect(scp.verify(await jwt({ sub: 'a', scp: { read: true } }))).rejects.toMatchObject(refused('its "scp" claim grants none of read, write, operate, admin'));
    await expect(verifier().verify(await jwt({ sub: 'a', scope: 'openid profile' }))).rejects.toMatchObject(refused('its "scope" claim grants none of read, write, operate, admin'));
  });
});
