import { MeshError } from '@keelson/schema';
import { checkCloneHost, curlResolvePin, parseCloneUrl, redactUrl, type HostLookup } from './cloneUrl';
import { isPrivateAddress, looseIPv4 } from './privateAddress';

function refusal(run: () => unknown): { code: string; message: string } {
  try {
    run();
  } catch (err) {
    if (err instanceof MeshError) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error('expected a MeshError, got none');
}

async function asyncRefusal(run: () => Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await run();
  } catch (err) {
    if (err instanceof MeshError) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error('expected a MeshError, got none');
}

/** A resolver with fixed answers: names other than these do not resolve. */
const fixedLookup = (answers: Record<string, string[]>): HostLookup => async (host) => {
  const found = answers[host];
  if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return found;
};

describe('parseCloneUrl', () => {
  it.each([
    ['https://github.com/org/repo.git', { protocol: 'https', host: 'github.com', port: null, remote: 'https://github.com/org/repo.git' }],
    ['https://GitHub.com:8443/org/repo', { protocol: 'https', host: 'github.com', port: 8443, remote: 'https://github.com:8443/org/repo' }],
    ['ssh://git@github.com/org/repo.git', { protocol: 'ssh', host: 'github.com', port: null, remote: 'ssh://git@github.com/org/repo.git' }],
    ['ssh://git@example.org:2222/~me/repo.git', { protocol: 'ssh', host: 'example.org', port: 2222, remote: 'ssh://git@example.org:2222/~me/repo.git' }],
    ['ssh://example.org/srv/repo.git', { protocol: 'ssh', host: 'example.org', port: null, remote: 'ssh://example.org/srv/repo.git' }],
    ['git@github.com:org/repo.git', { protocol: 'ssh', host: 'github.com', port: null, remote: 'git@github.com:org/repo.git' }],
    ['git@[2001:4860::8888]:org/repo.git', { protocol: 'ssh', host: '2001:4860::8888', port: null, remote: 'git@[2001:4860::8888]:org/repo.git' }],
    ['https://0x7f.1/org/repo.git', { protocol: 'https', host: '127.0.0.1', remote: 'https://127.0.0.1/org/repo.git' }],
    ['ssh://git@2130706433/org/repo.git', { protocol: 'ssh', host: '127.0.0.1', remote: 'ssh://git@2130706433/org/repo.git' }],
  ])('accepts %s', (raw, expected) => {
    expect(parseCloneUrl(raw)).toMatchObject(expected);
  });

  it.each([
    // Option-like parts: git or ssh would read them as options.
    ['ssh://-oProxyCommand=touch%20/tmp/pwned/x', 'host must not start with "-"'],
    ['ssh://-oProxyCommand=sh/x', 'host must not start with "-"'],
    ['ssh://%2DoProxyCommand=sh/x', 'host must not start with "-"'],
    ['ssh://-u@host/repo.git', 'user must not be empty or start with "-"'],
    ['-uhost:repo.git', 'must not start with "-"'],
    ['-u@host:repo.git', 'must not start with "-"'],
    ['git@-oProxyCommand=x:repo.git', 'host must not start with "-"'],
    ['git@host:-repo.git', 'path must not start with "-"'],
    ['git@host:%2Drepo.git', 'path must not start with "-"'],
    ['ssh://git@host/-repo.git', 'path must not start with "-"'],
    ['https://-host.example/repo.git', 'host must not start with "-"'],
    ['https://-u:x@host.example/repo.git', 'user must not start with "-"'],
    ['--upload-pack=touch /tmp/x', 'must not contain whitespace'],
    ['--upload-pack=sh', 'must not start with "-"'],
    // Other schemes and transports.
    ['http://example.org/repo.git', 'must be an https:// or ssh repository URL'],
    ['file:///srv/repo.git', 'must be an https:// or ssh repository URL'],
    ['git://example.org/repo.git', 'must be an https:// or ssh repository URL'],
    ['ext::sh -c touch% /tmp/x', 'must not contain whitespace'],
    ['ext::sh', 'must be an https:// or ssh repository URL'],
    ['fd::3', 'must be an https:// or ssh repository URL'],
    ['/srv/repo.git', 'must be an https:// or ssh repository URL'],
    ['./repo.git', 'must be an https:// or ssh repository URL'],
    ['git@host://repo', 'must be an https:// or ssh repository URL'],
    // Shapes.
    ['ssh://git:hunter2@example.org/repo.git', 'ssh URL must not carry a password'],
    ['https://example.org/repo.git?ref=main', 'must not carry a query or fragment'],
    ['https://example.org/repo.git#main', 'must not carry a query or fragment'],
    ['https://example.org/', 'must name a repository path'],
    ['https://exa mple.org/repo.git', 'must not contain whitespace'],
    ['https://example.org/repo\n.git', 'must not contain whitespace'],
    ['ssh://git@host:22x/repo.git', 'port must be a number'],
  ])('refuses %s with BAD_USER_INPUT', (raw, why) => {
    const error = refusal(() => parseCloneUrl(raw));
    expect(error.code).toBe('BAD_USER_INPUT');
    expect(error.message).toContain('input.url: ');
    expect(error.message).toContain(why);
  });

  it('takes https credentials out of the remote and keeps them apart, decoded', () => {
    expect(parseCloneUrl('https://user:s3cr%40t@example.org/org/repo.git')).toEqual({
      protocol: 'https',
      host: 'example.org',
      port: null,
      remote: 'https://example.org/org/repo.git',
      credentials: { username: 'user', password: 's3cr@t' },
    });
    // A bare token in the user part is a credential too.
    expect(parseCloneUrl('https://ghp_token123@github.com/org/repo.git')).toMatchObject({
      remote: 'https://github.com/org/repo.git',
      credentials: { username: 'ghp_token123', password: '' },
    });
  });

  it('never echoes credentials in a refusal', () => {
    const error = refusal(() => parseCloneUrl('https://user:s3cret-token@example.org/repo.git?x=1'));
    expect(error.message).not.toContain('s3cret-token');
    expect(error.message).toContain('***@example.org');
    expect(redactUrl('ssh://git:hunter2@example.org/r')).toBe('ssh://***@example.org/r');
    expect(redactUrl('tok:en@host:path')).toBe('***@host:path');
  });
});

describe('checkCloneHost', () => {
  const lookup = fixedLookup({
    'github.com': ['140.82.121.3'],
    'internal.example': ['10.1.2.3'],
    'mixed.example': ['140.82.121.4', '192.168.1.9'],
    'mapped.example': ['::ffff:127.0.0.1'],
    'v6.example': ['2606:4700::6810:84e5'],
  });

  it.each([
    ['https://127.0.0.1:8443/org/repo.git', ''],
    ['https://127.8.9.10/org/repo.git', ''],
    ['https://[::1]:8443/org/repo.git', ''],
    ['https://[::ffff:7f00:1]/org/repo.git', ''],
    ['https://[fe80::1]/org/repo.git', ''],
    ['https://[fd12:3456::1]/org/repo.git', ''],
    ['https://169.254.169.254/latest/meta-data', ''],
    ['https://10.0.0.8/org/repo.git', ''],
    ['https://172.20.1.1/org/repo.git', ''],
    ['https://192.168.0.10/org/repo.git', ''],
    ['https://100.64.0.1/org/repo.git', ''],
    ['https://0.0.0.0/org/repo.git', ''],
    ['https://2130706433/org/repo.git', ''],
    ['ssh://git@127.1/org/repo.git', ''],
    ['ssh://git@0x7f000001/org/repo.git', ''],
    ['ssh://git@[::1]/org/repo.git', ''],
    ['git@10.0.0.1:org/repo.git', ''],
    ['https://internal.example/org/repo.git', ' (it resolves to 10.1.2.3)'],
    ['https://mixed.example/org/repo.git', ' (it resolves to 192.168.1.9)'],
    ['ssh://git@mapped.example/org/repo.git', ' (it resolves to ::ffff:127.0.0.1)'],
  ])('refuses %s: not a public host%s', async (raw, how) => {
    const url = parseCloneUrl(raw);
    const error = await asyncRefusal(() => checkCloneHost(url, { lookup }));
    expect(error.code).toBe('BAD_USER_INPUT');
    expect(error.message).toBe(
      `input.url: host ${url.host}${how} is a loopback, private or link-local address; clones reach public hosts only unless KEELSON_GIT_ALLOW_PRIVATE_HOSTS allows it`,
    );
  });

  it.each([
    ['https://github.com/org/repo.git', ['140.82.121.3']],
    ['ssh://git@v6.example/org/repo.git', ['2606:4700::6810:84e5']],
    ['https://8.8.8.8/org/repo.git', ['8.8.8.8']],
    ['git@[2001:4860::8888]:org/repo.git', ['2001:4860::8888']],
  ])('accepts %s, a public host, with the addresses it checked', async (raw, addresses) => {
    expect(await checkCloneHost(parseCloneUrl(raw), { lookup })).toEqual(addresses);
  });

  it('lets the operator allow every private host, or named ones only', async () => {
    const loopback = parseCloneUrl('https://127.0.0.1:8443/org/repo.git');
    const internal = parseCloneUrl('https://Internal.Example/org/repo.git');
    expect(await checkCloneHost(loopback, { lookup, allowPrivateHosts: true })).toEqual(['127.0.0.1']);
    expect(await checkCloneHost(internal, { lookup, allowPrivateHosts: ['internal.example'] })).toEqual(['10.1.2.3']);
    expect((await asyncRefusal(() => checkCloneHost(loopback, { lookup, allowPrivateHosts: ['internal.example'] }))).code).toBe('BAD_USER_INPUT');
    expect((await asyncRefusal(() => checkCloneHost(internal, { lookup, allowPrivateHosts: ['127.0.0.1'] }))).code).toBe('BAD_USER_INPUT');
  });

  it('answers a host that does not resolve with UPSTREAM_FAILED', async () => {
    const error = await asyncRefusal(() => checkCloneHost(parseCloneUrl('https://nowhere.invalid/org/repo.git'), { lookup }));
    expect(error).toEqual({ code: 'UPSTREAM_FAILED', message: 'input.url: cannot resolve host nowhere.invalid: ENOTFOUND' });
  });

  it('resolves a real name through the system resolver: localhost is loopback', async () => {
    const error = await asyncRefusal(() => checkCloneHost(parseCloneUrl('https://localhost:8443/org/repo.git'), {}));
    expect(error.code).toBe('BAD_USER_INPUT');
    expect(error.message).toMatch(/^input\.url: host localhost \(it resolves to (127\.0\.0\.1|::1)\) is a loopback/);
  });

  it('pins an https clone to the checked addresses, and nothing for ssh', () => {
    expect(curlResolvePin(parseCloneUrl('https://github.com/org/repo.git'), ['140.82.121.3', '2606:50c0::1'])).toBe('github.com:443:140.82.121.3,[2606:50c0::1]');
    expect(curlResolvePin(parseCloneUrl('https://[::1]:8443/r.git'), ['::1'])).toBe('[::1]:8443:[::1]');
    expect(curlResolvePin(parseCloneUrl('git@github.com:org/repo.git'), ['140.82.121.3'])).toBeNull();
  });
});

describe('isPrivateAddress and looseIPv4', () => {
  it.each([
    ['127.1', '127.0.0.1'],
    ['2130706433', '127.0.0.1'],
    ['0x7f.0.0.1', '127.0.0.1'],
    ['0177.0.0.1', '127.0.0.1'],
    ['10.1', '10.0.0.1'],
    ['140.82.121.3', '140.82.121.3'],
    ['256.1.1.1', null],
    ['github.com', null],
    ['1.2.3.4.5', null],
  ])('reads %s as inet_aton does: %s', (host, expected) => {
    expect(looseIPv4(host)).toBe(expected);
  });

  it.each([
    ['127.0.0.1', true],
    ['10.255.0.1', true],
    ['172.31.255.255', true],
    ['172.32.0.1', false],
    ['192.168.1.1', true],
    ['169.254.169.254', true],
    ['224.0.0.1', true],
    ['255.255.255.255', true],
    ['8.8.8.8', false],
    ['::1', true],
    ['::', true],
    ['[::1]', true],
    ['fe80::1%eth0', true],
    ['fd00::1', true],
    ['ff02::1', true],
    ['::ffff:10.0.0.1', true],
    ['::ffff:8.8.8.8', false],
    ['64:ff9b::7f00:1', true],
    ['2002:7f00:1::', true],
    ['2002:808:808::', false],
    ['2606:4700::6810:84e5', false],
    ['not-an-address', true],
  ])('%s is private: %s', (address, expected) => {
    expect(isPrivateAddress(address)).toBe(expected);
  });
});

// Edge cases, added from the survivors of a mutation run on cloneUrl.ts (scripts/mutation).

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
