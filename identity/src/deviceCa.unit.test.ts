import { X509Certificate as NodeX509, createPrivateKey } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';
import { DEVICE_NAME_PATTERN, deviceCaPaths, deviceSerial, ensureDeviceCa, issueDeviceCertificate, writeDeviceFiles } from './deviceCa';

// The mesh CA on a real filesystem, in a directory of its own per test.
let home: string;
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'keelson-device-ca-'));
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

const mode = (path: string) => statSync(path).mode & 0o777;
const openFds = () => readdirSync('/proc/self/fd').length;
const firstSerialByte = (cert: x509.X509Certificate) => parseInt(cert.serialNumber.slice(0, 2), 16);

describe('ensureDeviceCa', () => {
  it('makes a self-signed CA valid from a minute ago for ten years, its key 0600 and its directory 0700', async () => {
    const before = Date.now();
    const ca = await ensureDeviceCa(home);
    const paths = deviceCaPaths(home);
    expect(ca.created).toBe(true);
    expect(ca.certPath).toBe(paths.cert);
    expect(ca.cert.subject).toBe('CN=Keelson Mesh device CA');
    expect(ca.cert.issuer).toBe('CN=Keelson Mesh device CA');
    expect(ca.cert.notBefore.getTime()).toBeLessThanOrEqual(before - 59_000);
    expect(ca.cert.notBefore.getTime()).toBeGreaterThanOrEqual(before - 62_000);
    expect(ca.cert.notAfter.getTime() - ca.cert.notBefore.getTime()).toBe(3650 * 86_400_000);
    expect(mode(paths.dir)).toBe(0o700);
    expect(mode(paths.key)).toBe(0o600);
    expect(mode(paths.cert)).toBe(0o644);
    expect(readdirSync(paths.dir).sort()).toEqual(['ca.crt', 'ca.key']);
  });

  it('marks the CA critical: a CA of path length 0 that signs certificates and CRLs only', async () => {
    const { cert } = await ensureDeviceCa(home);
    const basic = cert.getExtension(x509.BasicConstraintsExtension)!;
    expect(basic).toMatchObject({ ca: true, pathLength: 0, critical: true });
    const usage = cert.getExtension(x509.KeyUsagesExtension)!;
    expect(usage.critical).toBe(true);
    expect(usage.usages).toBe(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign);
    const node = new NodeX509(readFileSync(deviceCaPaths(home).cert));
    expect(node.ca).toBe(true);
    expect(node.checkIssued(node)).toBe(true);
    expect(node.verify(node.publicKey)).toBe(true);
  });

  it('writes the certificate and a PKCS#8 key as PEM of 64-column lines, each ending in one newline', async () => {
    await ensureDeviceCa(home);
    const certText = readFileSync(deviceCaPaths(home).cert, 'utf8');
    expect(certText).toMatch(/-----END CERTIFICATE-----\n$/);
    const keyText = readFileSync(deviceCaPaths(home).key, 'utf8');
    expect(keyText.endsWith('-----END PRIVATE KEY-----\n')).toBe(true);
    const lines = keyText.split('\n');
    expect(lines.at(-1)).toBe('');
    const body = lines.slice(1, -2);
    expect(body.length).toBeGreaterThan(1);
    for (const line of body.slice(0, -1)) expect(line).toHaveLength(64);
    expect(body.at(-1)!.length).toBeGreaterThan(0);
    expect(body.at(-1)!.length).toBeLessThanOrEqual(64);
    expect(createPrivateKey(keyText).asymmetricKeyDetails).toMatchObject({ namedCurve: 'prime256v1' });
  });

  it('closes every file it opens', async () => {
    await ensureDeviceCa(home); // warms the module's lazy loads
    rmSync(deviceCaPaths(home).dir, { recursive: true });
    const before = openFds();
    await ensureDeviceCa(home);
    expect(openFds()).toBe(before);
  });

  it('reuses the CA it finds, its key loaded not extractable', async () => {
    const made = await ensureDeviceCa(home);
    const again = await ensureDeviceCa(home);
    expect(again.created).toBe(false);
    expect(again.cert.equal(made.cert)).toBe(true);
    expect(again.keys.privateKey.extractable).toBe(false);
    const issued = await issueDeviceCertificate(again, 'laptop', 30);
    expect(new NodeX509(issued.certPem).verify(new NodeX509(made.cert.toString('pem')).publicKey)).toBe(true);
  });

  it('throws a read error other than a missing file instead of making a new CA', async () => {
    mkdirSync(deviceCaPaths(home).cert, { recursive: true });
    await expect(ensureDeviceCa(home)).rejects.toMatchObject({ code: 'EISDIR' });
    expect(readdirSync(deviceCaPaths(home).dir)).toEqual(['ca.crt']);
  });

  it('draws serials whose first byte is 0x01-0x7f: positive, and all 16 bytes kept in DER', () => {
    const firsts = new Set<number>();
    for (let i = 0; i < 5_000; i++) {
      const serial = deviceSerial();
      expect(serial).toMatch(/^[0-9a-f]{32}$/);
      firsts.add(Number.parseInt(serial.slice(0, 2), 16));
    }
    expect(Math.min(...firsts)).toBeGreaterThanOrEqual(0x01);
    expect(Math.max(...firsts)).toBeLessThanOrEqual(0x7f);
    // Drawn, not fixed: nearly every allowed value turns up.
    expect(firsts.size).toBeGreaterThan(120);
  });

  it('gives positive 16-byte serial numbers', async () => {
    const ca = await ensureDeviceCa(home);
    const certs = [ca.cert];
    for (let i = 0; i < 12; i++) certs.push(new x509.X509Certificate((await issueDeviceCertificate(ca, `d${i}`, 1)).certPem));
    for (const cert of certs) {
      expect(cert.serialNumber).toMatch(/^[0-9a-f]{32}$/);
      expect(firstSerialByte(cert)).toBeLessThan(0x80);
    }
  });
});

describe('issueDeviceCertificate', () => {
  it('signs a clientAuth-only certificate for the device, valid from a minute ago for the days asked', async () => {
    const ca = await ensureDeviceCa(home);
    const before = Date.now();
    const issued = await issueDeviceCertificate(ca, 'laptop-1', 30);
    expect(issued.certPem).toMatch(/-----END CERTIFICATE-----\n$/);
    const cert = new x509.X509Certificate(issued.certPem);
    expect(cert.subject).toBe('CN=laptop-1, O=Keelson Mesh device');
    expect(cert.issuer).toBe(ca.cert.subject);
    expect(cert.notBefore.getTime()).toBeLessThanOrEqual(before - 59_000);
    expect(cert.notBefore.getTime()).toBeGreaterThanOrEqual(before - 62_000);
    // A certificate keeps whole seconds.
    expect(cert.notAfter.getTime()).toBe(Math.floor(issued.notAfter.getTime() / 1000) * 1000);
    expect(cert.notAfter.getTime() - cert.notBefore.getTime()).toBe(30 * 86_400_000);
    expect(Buffer.from(cert.rawData).equals(issued.der)).toBe(true);

    expect(cert.getExtension(x509.BasicConstraintsExtension)).toMatchObject({ ca: false, critical: true });
    const usage = cert.getExtension(x509.KeyUsagesExtension)!;
    expect(usage).toMatchObject({ usages: x509.KeyUsageFlags.digitalSignature, critical: true });
    const eku = cert.getExtension(x509.ExtendedKeyUsageExtension)!;
    expect(eku.critical).toBe(false);
    expect(eku.usages).toEqual([x509.ExtendedKeyUsage.clientAuth]);

    const node = new NodeX509(issued.certPem);
    const caNode = new NodeX509(ca.cert.toString('pem'));
    expect(node.ca).toBe(false);
    expect(node.checkIssued(caNode)).toBe(true);
    expect(node.verify(caNode.publicKey)).toBe(true);
    expect(node.checkPrivateKey(createPrivateKey(issued.keyPem))).toBe(true);
  });

  it("ends a device's validity with the CA's", async () => {
    const ca = await ensureDeviceCa(home);
    const issued = await issueDeviceCertificate(ca, 'long-lived', 100_000);
    expect(issued.notAfter.getTime()).toBe(ca.cert.notAfter.getTime());
  });

  it.each([
    ['a name of 65 characters', 'a'.repeat(65)],
    ['a trailing character outside the set', 'laptop/'],
    ['a leading dot', '.laptop'],
    ['a space', 'my laptop'],
    ['an empty name', ''],
  ])('refuses %s, naming it and the rule', async (_what, name) => {
    const ca = await ensureDeviceCa(home);
    await expect(issueDeviceCertificate(ca, name, 1)).rejects.toThrow(
      `device name "${name}": letters, digits, ".", "_" and "-", at most 64, starting with a letter or digit`,
    );
    expect(DEVICE_NAME_PATTERN.test(name)).toBe(false);
  });

  it('takes a name of 64 characters', async () => {
    const ca = await ensureDeviceCa(home);
    const name = `A${'b'.repeat(62)}_`;
    await expect(issueDeviceCertificate(ca, name, 1)).resolves.toMatchObject({ der: expect.any(Buffer) });
  });
});

describe('writeDeviceFiles', () => {
  it('writes <name>.crt 0644 and <name>.key 0600 into a 0700 directory, as issued', async () => {
    const ca = await ensureDeviceCa(home);
    const issued = await issueDeviceCertificate(ca, 'phone', 7);
    const dir = join(home, 'devices', 'phone');
    const paths = writeDeviceFiles(dir, 'phone', issued);
    expect(paths).toEqual({ cert: join(dir, 'phone.crt'), key: join(dir, 'phone.key') });
    expect(mode(dir)).toBe(0o700);
    expect(mode(paths.cert)).toBe(0o644);
    expect(mode(paths.key)).toBe(0o600);
    expect(readFileSync(paths.cert, 'utf8')).toBe(issued.certPem);
    expect(readFileSync(paths.key, 'utf8')).toBe(issued.keyPem);
    expect(readdirSync(dir).sort()).toEqual(['phone.crt', 'phone.key']);
  });
});
