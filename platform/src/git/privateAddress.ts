import { BlockList, isIPv4, isIPv6 } from 'node:net';

/**
 * Address ranges a clone may not reach unless the operator allows it: loopback, private (RFC 1918,
 * unique local), link-local (cloud metadata lives at 169.254.169.254), carrier-grade NAT, unspecified,
 * multicast, reserved, documentation and benchmarking ranges.
 */
const blocked = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  blocked.addSubnet(net, bits, 'ipv6');
}

/**
 * An IPv4 literal as the C library's `inet_aton` reads it (what ssh and curl connect to): 1 to 4
 * parts, each decimal, octal (leading 0) or hex (0x), the last filling the remaining bytes —
 * `127.1`, `2130706433`, `0x7f.0.0.1` are all 127.0.0.1. Null when `host` is not one.
 */
export function looseIPv4(host: string): string | null {
  const parts = host.split('.');
  if (parts.length < 1 || parts.length > 4) return null;
  const values: number[] = [];
  for (const part of parts) {
    let value: number;
    if (/^0x[0-9a-f]*$/i.test(part)) value = part.length === 2 ? 0 : parseInt(part.slice(2), 16);
    else if (/^0[0-7]*$/.test(part)) value = parseInt(part, 8);
    else if (/^[1-9][0-9]*$/.test(part)) value = parseInt(part, 10);
    else return null;
    values.push(value);
  }
  const last = values.pop()!;
  if (values.some((v) => v > 255) || last >= 256 ** (4 - values.length)) return null;
  let n = last;
  values.forEach((v, i) => (n += v * 256 ** (3 - i)));
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

/** The 16 bytes of an IPv6 literal (no zone), or null. */
function ipv6Bytes(addr: string): number[] | null {
  if (!isIPv6(addr)) return null;
  let text = addr;
  const tail: number[] = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    tail.push(...dotted[1]!.split('.').map(Number));
    text = `${text.slice(0, -dotted[1]!.length)}0:0`;
  }
  const [head, rest] = text.includes('::') ? text.split('::') : [text, undefined];
  const groups = (s: string | undefined) => (s ? s.split(':').filter((g) => g !== '').map((g) => parseInt(g, 16)) : []);
  const left = groups(head);
  const right = groups(rest);
  const words = rest === undefined ? left : [...left, ...new Array(8 - left.length - right.length).fill(0), ...right];
  const bytes = words.flatMap((w) => [w >> 8, w & 255]);
  if (tail.length) bytes.splice(12, 4, ...tail);
  return bytes.length === 16 ? bytes : null;
}

/** The IPv4 address an IPv6 one carries (mapped, compatible, NAT64, 6to4), if it carries one. */
function embeddedIPv4(bytes: number[]): string | null {
  const zero = (from: number, to: number) => bytes.slice(from, to).every((b) => b === 0);
  if (zero(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return bytes.slice(12).join('.');
  if (zero(0, 12)) return bytes.slice(12).join('.');
  if (bytes[0] === 0x00 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && zero(4, 12)) return bytes.slice(12).join('.');
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return bytes.slice(2, 6).join('.');
  return null;
}

/** Whether an address (IPv4 or IPv6 literal, brackets and zone allowed) is not a public unicast one. */
export function isPrivateAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (isIPv4(bare)) return blocked.check(bare, 'ipv4');
  const bytes = ipv6Bytes(bare);
  if (!bytes) return true; // not an address at all: never treat it as public
  const v4 = embeddedIPv4(bytes);
  if (v4 !== null && blocked.check(v4, 'ipv4')) return true;
  return blocked.check(bare, 'ipv6');
}
