import { MeshError } from '@keelson/schema';
import { checkCloneHost, curlResolvePin, parseCloneUrl, redactUrl } from './cloneUrl';

function refusal(run: () => unknown): { code: string; message: string } {
  try {
    run();
  } catch (err) {
    if (err instanceof MeshError) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error('expected a MeshError, got none');
}

describe('redactUrl', () => {
  it.each([
    ['https://user:pw@host/r', 'https://***@host/r'],
    ['https://a@b@host/r', 'https://***@host/r'],
    ['https://host/r@x', 'https://host/r@x'],
    ['https://host/r', 'https://host/r'],
    ['HTTPS://tok@host/r', 'HTTPS://***@host/r'],
    ['git+ssh://u@h/r', 'git+ssh://***@h/r'],
    ['user@host:path', '***@host:path'],
    ['host:path/a@b', 'host:path/a@b'],
    ['/srv/a@b', '/srv/a@b'],
    ['a@b', '***@b'],
    ['plain', 'plain'],
    ['https://@h/r', 'https://***@h/r'],
    ['@h', '***@h'],
    ['u@h:a/b', '***@h:a/b'],
    ['1https://u@h/r', '1https://u@h/r'],
  ])('%s → %s', (url, redacted) => {
    expect(redactUrl(url)).toBe(redacted);
  });
});

describe('parseCloneUrl: the edges of what it accepts', () => {
  it('names the field it was given in a refusal, the quoted URL last', () => {
    expect(refusal(() => parseCloneUrl('http://x/r', 'input.repository'))).toEqual({
      code: 'BAD_USER_INPUT',
      message: 'input.repository: must be an https:// or ssh repository URL, got "http://x/r"',
    });
  });

  it.each([
    ['https://host.example./r.git', 'host.example.'],
    ['https://a/r', 'a'],
    ['https://a_b.example/r', 'a_b.example'],
    ['HTTPS://Host.Example/r', 'host.example'],
    ['https://[2606:4700::1]/r', '2606:4700::1'],
    ['ssh://[2606:4700::1]:22/r', '2606:4700::1'],
    ['ssh://h/r', 'h'],
    ['SSH://Git@Host/r', 'host'],
    ['git@h:r', 'h'],
    ['u@[2606:4700::1]:r', '2606:4700::1'],
  ])('reads the host of %s as %s', (raw, host) => {
    expect(parseCloneUrl(raw).host).toBe(host);
  });

  it('reads ports, and accepts five digits but no more', () => {
    expect(parseCloneUrl('ssh://h:65535/r').port).toBe(65535);
    expect(parseCloneUrl('ssh://h:22/r').port).toBe(22);
    expect(refusal(() => parseCloneUrl('ssh://h:/r')).message).toContain('the port must be a number');
    expect(refusal(() => parseCloneUrl('ssh://h:123456/r')).message).toContain('the port must be a number');
    expect(refusal(() => parseCloneUrl('ssh://h:-1/r')).message).toContain('the port must be a number');
    expect(parseCloneUrl('https://h:443/r').port).toBeNull();
    expect(parseCloneUrl('https://h:444/r').port).toBe(444);
  });

  it.each([
    ['ssh://@h/r', 'the user must not be empty or start with "-"'],
    ['ssh://%2Du@h/r', 'the user must not be empty or start with "-"'],
    ['ssh://h/', 'must name a repository path'],
    ['ssh://h//-r', 'the repository path must not start with "-"'],
    ['ssh:///r', 'must name a host'],
    ['ssh://ho$t/r', 'the host is not a valid host name or IP address'],
    ['ssh://[zz::1]/r', 'the host is not a valid host name or IP address'],
    ['ssh://.h/r', 'the host is not a valid host name or IP address'],
    ['ssh://h-/r', 'the host is not a valid host name or IP address'],
    ['git@h://r', 'must be an https:// or ssh repository URL'],
    ['git@h:/', 'must name a repository path'],
    ['git@[h]:r', 'the host is not a valid host name or IP address'],
    ['%2Du@h:r', 'the user must not start with "-"'],
    ['u@h', 'must be an https:// or ssh repository URL'],
    ['@h:r', 'must be an https:// or ssh repository URL'],
    ['https://%2Du@h/r', 'the user must not start with "-"'],
    ['https://[::1/r', 'is not a valid https URL'],
    ['https://h/r#', 'must not carry a query or fragment'],
    ['https://h', 'must name a repository path'],
    ['https://h/%2D', 'the repository path must not start with "-"'],
    ['https://h//-x', 'the repository path must not start with "-"'],
    ['x\u0000y', 'must not contain whitespace or control characters'],
    ['https://h/r\u007f', 'must not contain whitespace or control characters'],
    ['https://h/r\tx', 'must not contain whitespace or control characters'],
    ['Ssh+git://h/r', 'must be an https:// or ssh repository URL'],
    ['transport::address', 'must be an https:// or ssh repository URL'],
    ['xhttps://h/r', 'must be an https:// or ssh repository URL'],
    ['xssh://h/r', 'must be an https:// or ssh repository URL'],
    ['/u@h:r', 'must be an https:// or ssh repository URL'],
  ])('refuses %j: %s', (raw, why) => {
    const error = refusal(() => parseCloneUrl(raw));
    expect(error.code).toBe('BAD_USER_INPUT');
    expect(error.message).toContain(`input.url: ${why}, got `);
  });

  it('keeps the user of an https URL only as credentials, and a password alone too', () => {
    expect(parseCloneUrl('https://:tok@h/r')).toEqual({ protocol: 'https', host: 'h', port: null, remote: 'https://h/r', credentials: { username: '', password: 'tok' } });
    expect(parseCloneUrl('https://h/r')).not.toHaveProperty('credentials');
    expect(parseCloneUrl('https://%zz@h/r').credentials).toEqual({ username: '%zz', password: '' });
  });

  it('keeps an ssh or scp-like URL as it came for the remote', () => {
    expect(parseCloneUrl('ssh://git@h:2222/r')).toEqual({ protocol: 'ssh', host: 'h', port: 2222, remote: 'ssh://git@h:2222/r' });
    expect(parseCloneUrl('git@H:r')).toEqual({ protocol: 'ssh', host: 'h', port: null, remote: 'git@H:r' });
  });
});

describe('checkCloneHost: the edges', () => {
  it('names its field, and reports a name that resolves to nothing, or fails without an error code', async () => {
    const url = parseCloneUrl('https://empty.example/r');
    await expect(checkCloneHost(url, { lookup: async () => [], field: 'input.source' })).rejects.toMatchObject({
      code: 'UPSTREAM_FAILED',
      message: 'input.source: host empty.example resolves to no address',
    });
    await expect(
      checkCloneHost(url, {
        lookup: async () => {
          throw new Error('resolver down');
        },
      }),
    ).rejects.toMatchObject({ code: 'UPSTREAM_FAILED', message: 'input.url: cannot resolve host empty.example: resolver down' });
  });

  it('never asks the resolver about an IP literal, zone or not', async () => {
    const lookup = async (): Promise<string[]> => {
      throw new Error('asked the resolver');
    };
    await expect(checkCloneHost(parseCloneUrl('https://8.8.8.8/r'), { lookup })).resolves.toEqual(['8.8.8.8']);
    await expect(checkCloneHost({ protocol: 'ssh', host: '2606:4700::1%eth0', port: null, remote: 'x' }, { lookup })).resolves.toEqual(['2606:4700::1%eth0']);
  });

  it('refuses a literal without naming what it resolves to, and matches allowed names case-insensitively and as inet_aton reads them', async () => {
    await expect(checkCloneHost(parseCloneUrl('https://10.0.0.1/r'), { field: 'f' })).rejects.toMatchObject({
      message: 'f: host 10.0.0.1 is a loopback, private or link-local address; clones reach public hosts only unless KEELSON_GIT_ALLOW_PRIVATE_HOSTS allows it',
    });
    await expect(checkCloneHost(parseCloneUrl('https://10.0.0.1/r'), { allowPrivateHosts: ['10.1'] })).resolves.toEqual(['10.0.0.1']);
    await expect(checkCloneHost(parseCloneUrl('https://[::1]/r'), { allowPrivateHosts: ['[::1]'] })).resolves.toEqual(['::1']);
    await expect(checkCloneHost(parseCloneUrl('https://in.example/r'), { allowPrivateHosts: ['IN.EXAMPLE'], lookup: async () => ['10.0.0.2'] })).resolves.toEqual(['10.0.0.2']);
    await expect(checkCloneHost(parseCloneUrl('https://in.example/r'), { allowPrivateHosts: [], lookup: async () => ['10.0.0.2'] })).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
  });
});

describe('curlResolvePin', () => {
  it('pins the default port 443, brackets IPv6 hosts and addresses, and pins nothing without addresses', () => {
    expect(curlResolvePin(parseCloneUrl('https://h/r'), ['1.2.3.4'])).toBe('h:443:1.2.3.4');
    expect(curlResolvePin(parseCloneUrl('https://h:8443/r'), ['1.2.3.4', '5.6.7.8'])).toBe('h:8443:1.2.3.4,5.6.7.8');
    expect(curlResolvePin(parseCloneUrl('https://[2606:4700::1]/r'), ['2606:4700::1'])).toBe('[2606:4700::1]:443:[2606:4700::1]');
    expect(curlResolvePin(parseCloneUrl('https://h/r'), [])).toBeNull();
  });
});
