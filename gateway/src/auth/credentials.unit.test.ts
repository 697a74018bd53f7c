import { callerKey, MeshError, scopes, type Caller } from '@keelson/schema';
import { acceptDeviceConnection, anonymousCaller, authenticateRequest, credentialKey, isLoopbackPeer, type CredentialCheck } from './credentials';
import { supergraphForPlanning } from './securityFeatures';

type IncomingMessage = NonNullable<Parameters<typeof authenticateRequest>[0]>;
type TLSSocket = Parameters<typeof acceptDeviceConnection>[0];

const tokenCaller: Caller = { subject: 'token:ci', kind: 'token', scopes: ['read'], tokenId: 't1' };
const deviceCaller: Caller = { subject: 'token:laptop', kind: 'token', scopes: ['read'], tokenId: 'd1' };

/** A credential check that records what it was asked: a header, or a certificate. */
function recordingCheck(withDevices = true): CredentialCheck & { asked: unknown[] } {
  const asked: unknown[] = [];
  return {
    asked,
    authenticate: async (authorization) => {
      asked.push(['header', authorization]);
      return { caller: tokenCaller };
    },
    ...(withDevices
      ? {
          authenticateDevice: async (der: Uint8Array) => {
            asked.push(['device', Buffer.from(der).toString()]);
            return { caller: deviceCaller };
          },
        }
      : {}),
    live: async (ids) => new Set(ids),
    onRevoked: () => () => undefined,
  };
}

/** The parts of a request on a TLS connection that device mode reads. */
function request(remoteAddress: string | undefined, tls: { authorized?: boolean; raw?: Buffer; noPeerCertificate?: boolean } = {}): IncomingMessage {
  const socket = {
    remoteAddress,
    authorized: tls.authorized ?? false,
    ...(tls.noPeerCertificate ? {} : { getPeerCertificate: () => (tls.raw ? { raw: tls.raw } : {}) }),
  };
  return { socket } as unknown as IncomingMessage;
}

describe('isLoopbackPeer', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.8.9.10', true],
    ['::1', true],
    ['::ffff:127.0.0.1', true],
    ['::ffff:10.0.0.1', false],
    ['10.0.0.1', false],
    ['::ffff:', false],
    ['', false],
    [undefined, false],
  ])('%s is this machine: %s', (address, expected) => {
    expect(isLoopbackPeer(address)).toBe(expected);
  });
});

describe('acceptDeviceConnection', () => {
  it('takes a loopback peer with or without a certificate, another peer only with an authorized one', () => {
    expect(acceptDeviceConnection({ remoteAddress: '127.0.0.1', authorized: false } as TLSSocket)).toBe(true);
    expect(acceptDeviceConnection({ remoteAddress: '10.0.0.2', authorized: true } as TLSSocket)).toBe(true);
    expect(acceptDeviceConnection({ remoteAddress: '10.0.0.2', authorized: false } as TLSSocket)).toBe(false);
  });
});

describe('authenticateRequest', () => {
  it('asks about the authorization header when device mode is off, whoever the peer is', async () => {
    const check = recordingCheck();
    await expect(authenticateRequest(request('10.0.0.2', { authorized: true, raw: Buffer.from('cert') }), 'Bearer x', check, false)).resolves.toEqual({ caller: tokenCaller });
    expect(check.asked).toEqual([['header', 'Bearer x']]);
  });

  it('asks about the header in device mode for a loopback peer, or with no request at all (a subscription handshake)', async () => {
    const check = recordingCheck();
    await authenticateRequest(request('127.0.0.1', { authorized: true, raw: Buffer.from('cert') }), 'Bearer a', check, true);
    await authenticateRequest(undefined, 'Bearer b', check, true);
    expect(check.asked).toEqual([['header', 'Bearer a'], ['header', 'Bearer b']]);
  });

  it('off loopback in device mode, the certificate decides, never the header', async () => {
    const check = recordingCheck();
    await expect(authenticateRequest(request('10.0.0.2', { authorized: true, raw: Buffer.from('cert') }), 'Bearer x', check, true)).resolves.toEqual({ caller: deviceCaller });
    expect(check.asked).toEqual([['device', 'cert']]);
  });

  it.each([
    ['no certificate', { authorized: true }],
    ['an unauthorized certificate', { authorized: false, raw: Buffer.from('cert') }],
    ['a socket that is not TLS', { authorized: true, noPeerCertificate: true }],
  ])('off loopback in device mode, refuses %s as UNAUTHENTICATED', async (_what, tls) => {
    const check = recordingCheck();
    const refused = authenticateRequest(request('10.0.0.2', tls), 'Bearer x', check, true);
    await expect(refused).rejects.toThrow(MeshError);
    await expect(refused).rejects.toMatchObject({ code: 'UNAUTHENTICATED', message: expect.stringContaining('only enrolled devices') });
    expect(check.asked).toEqual([]);
  });

  it('refuses a device when the credential check cannot check certificates', async () => {
    const refused = authenticateRequest(request('10.0.0.2', { authorized: true, raw: Buffer.from('cert') }), 'Bearer x', recordingCheck(false), true);
    await expect(refused).rejects.toMatchObject({ code: 'UNAUTHENTICATED', message: 'this gateway cannot check device certificates' });
  });
});

describe('the anonymous caller and credential keys', () => {
  it('with authentication off, every request is a service holding every scope, named for the setting', () => {
    expect(anonymousCaller).toEqual({ subject: 'anonymous (KEELSON_AUTH=off)', kind: 'service', scopes: [...scopes] });
  });

  it('counts and revokes sockets under the caller’s stable key', () => {
    expect(credentialKey(tokenCaller)).toBe(callerKey(tokenCaller));
  });
});

describe('supergraphForPlanning', () => {
  const link = (url: string, extra = '') => `@link(url: "${url}"${extra}, for: SECURITY)`;

  it('drops `for: SECURITY` from the two features this gateway enforces, keeping their imports', () => {
    const sdl = [
      link('https://specs.apollo.dev/authenticated/v0.1', ', import: ["@authenticated"]'),
      link('https://specs.apollo.dev/requiresScopes/v0.1'),
    ].join('\n');
    expect(supergraphForPlanning(sdl)).toBe(
      ['@link(url: "https://specs.apollo.dev/authenticated/v0.1", import: ["@authenticated"])', '@link(url: "https://specs.apollo.dev/requiresScopes/v0.1")'].join('\n'),
    );
  });

  it('leaves any other security feature, and links that are not for security, as they are', () => {
    const sdl = [link('https://specs.apollo.dev/policy/v0.1'), link('https://example.com/authenticated/v0.1'), '@link(url: "https://specs.apollo.dev/authenticated/v0.1")'].join('\n');
    expect(supergraphForPlanning(sdl)).toBe(sdl);
  });
});
