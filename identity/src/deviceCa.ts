import 'reflect-metadata';
import { createHash, randomBytes, webcrypto } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';

// Node's WebCrypto under its own types: the global DOM ones are not part of this program.
type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[1]);

/** ECDSA P-256 with SHA-256: small keys and certificates every TLS stack takes. */
const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
/** The mesh CA signs device certificates for this long at most; it lives ten years. */
const CA_DAYS = 3650;
/** A device name: also its file name and the certificate's CN. */
export const DEVICE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** Where the mesh CA of device certificates is kept: `<home>/device-ca/`. */
export function deviceCaPaths(home: string): { dir: string; cert: string; key: string } {
  const dir = join(home, 'device-ca');
  return { dir, cert: join(dir, 'ca.crt'), key: join(dir, 'ca.key') };
}

/** What the certificate table keeps of a device certificate: the SHA-256 of its DER. */
export function certificateDigest(der: Uint8Array): Buffer {
  return createHash('sha256').update(der).digest();
}

interface Ca {
  cert: x509.X509Certificate;
  keys: CryptoKeyPair;
}

/** Writes `text` to `path` atomically, readable by the owner only when `secret`. */
function writeFileAtomic(path: string, text: string, secret: boolean): void {
  const temp = `${path}.${process.pid}.tmp`;
  const fd = openSync(temp, 'w', secret ? 0o600 : 0o644);
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
}

async function exportKeyPem(key: CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return `-----BEGIN PRIVATE KEY-----\n${der.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n?$/, '\n')}-----END PRIVATE KEY-----\n`;
}

async function importKeyPem(pem: string): Promise<CryptoKey> {
  const der = Buffer.from(pem.replace(/-----(BEGIN|END) PRIVATE KEY-----|\s/g, ''), 'base64');
  return webcrypto.subtle.importKey('pkcs8', der, ALGORITHM, false, ['sign']);
}

/**
 * A certificate serial: 16 random bytes read as a positive integer that needs all 16 — its first byte
 * 0x01–0x7f (0x80 and up would make it negative; 0x00 would drop from its DER encoding, leaving 15).
 */
export const deviceSerial = (): string => {
  const bytes = randomBytes(16);
  bytes[0] = 1 + (bytes[0]! % 0x7f);
  return bytes.toString('hex');
};

/**
 * The mesh CA in `<home>/device-ca/` (made on first use: `ca.crt`, and `ca.key` mode 0600). The
 * gateway trusts it with `KEELSON_TLS_CLIENT_CA=<home>/device-ca/ca.crt`.
 */
export async function ensureDeviceCa(home: string): Promise<Ca & { created: boolean; certPath: string }> {
  const paths = deviceCaPaths(home);
  let certPem: string | undefined;
  let keyPem: string | undefined;
  try {
    certPem = readFileSync(paths.cert, 'utf8');
    keyPem = readFileSync(paths.key, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (certPem && keyPem) {
    const cert = new x509.X509Certificate(certPem);
    const privateKey = await importKeyPem(keyPem);
    return { cert, keys: { privateKey, publicKey: await cert.publicKey.export() }, created: false, certPath: paths.cert };
  }
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
  const keys = (await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify'])) as CryptoKeyPair;
  const notBefore = new Date(Date.now() - 60_000);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: deviceSerial(),
    name: 'CN=Keelson Mesh device CA',
    notBefore,
    notAfter: new Date(notBefore.getTime() + CA_DAYS * 86_400_000),
    keys,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  writeFileAtomic(paths.key, await exportKeyPem(keys.privateKey), true);
  writeFileAtomic(paths.cert, cert.toString('pem') + '\n', false);
  return { cert, keys, created: true, certPath: paths.cert };
}

/** A device certificate and its key, as PEM, and the certificate's DER (what the table digests). */
export interface DeviceCertificate {
  certPem: string;
  keyPem: string;
  der: Buffer;
  notAfter: Date;
}

/**
 * A client certificate for `name` signed by the mesh CA (clientAuth only), valid from a minute ago
 * for `days` days; a fresh P-256 key that only this answer holds.
 */
export async function issueDeviceCertificate(ca: Ca, name: string, days: number): Promise<DeviceCertificate> {
  if (!DEVICE_NAME_PATTERN.test(name)) throw new Error(`device name "${name}": letters, digits, ".", "_" and "-", at most 64, starting with a letter or digit`);
  const keys = (await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify'])) as CryptoKeyPair;
  const notBefore = new Date(Date.now() - 60_000);
  const notAfter = new Date(Math.min(notBefore.getTime() + days * 86_400_000, ca.cert.notAfter.getTime()));
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: deviceSerial(),
    subject: `CN=${name}, O=Keelson Mesh device`,
    issuer: ca.cert.subject,
    notBefore,
    notAfter,
    publicKey: keys.publicKey,
    signingKey: ca.keys.privateKey,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth], false),
      await x509.AuthorityKeyIdentifierExtension.create(ca.keys.publicKey),
    ],
  });
  return { certPem: cert.toString('pem') + '\n', keyPem: await exportKeyPem(keys.privateKey), der: Buffer.from(cert.rawData), notAfter };
}

/** Writes a device's `<name>.crt` and `<name>.key` (mode 0600) into `dir`; returns their paths. */
export function writeDeviceFiles(dir: string, name: string, issued: DeviceCertificate): { cert: string; key: string } {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const paths = { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
  writeFileAtomic(paths.key, issued.keyPem, true);
  writeFileAtomic(paths.cert, issued.certPem, false);
  return paths;
}
