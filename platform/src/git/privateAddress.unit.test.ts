import { isPrivateAddress, looseIPv4 } from './privateAddress';

describe('isPrivateAddress: every blocked IPv4 range, edge to edge', () => {
  // [last public address before, first blocked, last blocked, first public address after] (null: the neighbour is blocked too)
  it.each([
    ['0.0.0.0/8', null, '0.0.0.0', '0.255.255.255', '1.0.0.0'],
    ['10.0.0.0/8', '9.255.255.255', '10.0.0.0', '10.255.255.255', '11.0.0.0'],
    ['100.64.0.0/10', '100.63.255.255', '100.64.0.0', '100.127.255.255', '100.128.0.0'],
    ['127.0.0.0/8', '126.255.255.255', '127.0.0.0', '127.255.255.255', '128.0.0.0'],
    ['169.254.0.0/16', '169.253.255.255', '169.254.0.0', '169.254.255.255', '169.255.0.0'],
    ['172.16.0.0/12', '172.15.255.255', '172.16.0.0', '172.31.255.255', '172.32.0.0'],
    ['192.0.0.0/24', '191.255.255.255', '192.0.0.0', '192.0.0.255', '192.0.1.0'],
    ['192.0.2.0/24', '192.0.1.255', '192.0.2.0', '192.0.2.255', '192.0.3.0'],
    ['192.88.99.0/24', '192.88.98.255', '192.88.99.0', '192.88.99.255', '192.88.100.0'],
    ['192.168.0.0/16', '192.167.255.255', '192.168.0.0', '192.168.255.255', '192.169.0.0'],
    ['198.18.0.0/15', '198.17.255.255', '198.18.0.0', '198.19.255.255', '198.20.0.0'],
    ['198.51.100.0/24', '198.51.99.255', '198.51.100.0', '198.51.100.255', '198.51.101.0'],
    ['203.0.113.0/24', '203.0.112.255', '203.0.113.0', '203.0.113.255', '203.0.114.0'],
    ['224.0.0.0/4', '223.255.255.255', '224.0.0.0', '239.255.255.255', null],
    ['240.0.0.0/4', null, '240.0.0.0', '255.255.255.255', null],
  ])('%s', (_range, before, first, last, after) => {
    expect(isPrivateAddress(first)).toBe(true);
    expect(isPrivateAddress(last)).toBe(true);
    if (before) expect(isPrivateAddress(before)).toBe(false);
    if (after) expect(isPrivateAddress(after)).toBe(false);
  });
});

describe('isPrivateAddress: every blocked IPv6 range, edge to edge', () => {
  it.each([
    ['::/128 and ::1/128', null, '::', '::1', null],
    ['100::/64', 'ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', '100::', '100::ffff:ffff:ffff:ffff', '100:0:0:1::'],
    ['2001::/23', '2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff', '2001::', '2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff', '2001:200::'],
    ['2001:db8::/32', '2001:db7:ffff:ffff:ffff:ffff:ffff:ffff', '2001:db8::', '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff', '2001:db9::'],
    ['fc00::/7', 'fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'fc00::', 'fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'fe00::'],
    ['fe80::/10', 'fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'fe80::', 'febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff', null],
    ['fec0::/10', null, 'fec0::', 'feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', null],
    ['ff00::/8', null, 'ff00::', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', null],
  ])('%s', (_range, before, first, last, after) => {
    expect(isPrivateAddress(first)).toBe(true);
    expect(isPrivateAddress(last)).toBe(true);
    if (before) expect(isPrivateAddress(before)).toBe(false);
    if (after) expect(isPrivateAddress(after)).toBe(false);
  });
});

describe('isPrivateAddress: an IPv4 address carried inside an IPv6 one', () => {
  it.each([
    ['::ffff:10.0.0.1', true, 'mapped, dotted'],
    ['::ffff:a00:1', true, 'mapped, hex'],
    ['::ffff:808:808', false, 'mapped public'],
    ['::ffff:140.82.121.130', false, 'mapped public, every octet of the dotted tail read whole'],
    ['0:0:0:0:0:ffff:140.82.121.130', false, 'mapped public, written out'],
    ['::ff:a00:1', false, 'only the low byte of the mapped marker'],
    ['::ff00:a00:1', false, 'only the high byte of the mapped marker'],
    ['1::ffff:a00:1', false, 'the marker after a non-zero prefix'],
    ['::a00:1', true, 'compatible'],
    ['::10.0.0.1', true, 'compatible, dotted'],
    ['::808:808', false, 'compatible public'],
    ['1::a00:1', false, 'not compatible: a non-zero prefix'],
    ['64:ff9b::a00:1', true, 'NAT64'],
    ['64:ff9b::10.0.0.1', true, 'NAT64, dotted'],
    ['64:ff9b::808:808', false, 'NAT64 public'],
    ['64:ff9b:1::a00:1', false, 'not NAT64: non-zero middle'],
    ['64:ff9b:0:0:0:1:a00:1', false, 'not NAT64: non-zero byte 11'],
    ['65:ff9b::a00:1', false, 'not NAT64: byte 1'],
    ['164:ff9b::a00:1', false, 'not NAT64: byte 0'],
    ['64:fe9b::a00:1', false, 'not NAT64: byte 2'],
    ['64:ff9a::a00:1', false, 'not NAT64: byte 3'],
    ['2002:a00:1::', true, '6to4'],
    ['2002:c0a8:101::1', true, '6to4 of 192.168.1.1'],
    ['2002:808:808::', false, '6to4 public'],
    ['2003:a00:1::', false, 'not 6to4: byte 1'],
    ['2102:a00:1::', false, 'not 6to4: byte 0'],
  ])('%s is private: %s (%s)', (address, expected) => {
    expect(isPrivateAddress(address)).toBe(expected);
  });
});

describe('isPrivateAddress: the forms an address arrives in', () => {
  it.each([
    ['[2606:4700::1]', false],
    ['[::1]', true],
    ['fe80::1%eth0', true],
    ['[fe80::1%25eth0]', true],
    ['2606:4700::1%eth0', false],
    ['8.8.8.8', false],
    ['', true],
    ['github.com', true],
    ['1.2.3', true],
    ['::ffff:999.0.0.1', true],
    ['[2606:4700::1]]', true],
    ['2606:[4700::1', true],
  ])('%j is private: %s', (address, expected) => {
    expect(isPrivateAddress(address)).toBe(expected);
  });
});

describe('looseIPv4', () => {
  it.each([
    ['1.2.3.4', '1.2.3.4'],
    ['0x', '0.0.0.0'],
    ['0x.0.0.1', '0.0.0.1'],
    ['0X7F.1', '127.0.0.1'],
    ['0xff', '0.0.0.255'],
    ['0', '0.0.0.0'],
    ['010.0.0.1', '8.0.0.1'],
    ['1.2.3.255', '1.2.3.255'],
    ['1.2.65535', '1.2.255.255'],
    ['1.16777215', '1.255.255.255'],
    ['4294967295', '255.255.255.255'],
    ['255.1', '255.0.0.1'],
    ['1.2.3.256', null],
    ['1.2.3.4.0', null],
    ['1.2.65536', null],
    ['1.16777216', null],
    ['4294967296', null],
    ['256.1', null],
    ['1.256.1', null],
    ['1.2.256.1', null],
    ['', null],
    ['1..2', null],
    [' 1', null],
    ['1a', null],
    ['a1', null],
    ['0x1g', null],
    ['a0x1', null],
    ['08', null],
    ['018', null],
    ['00x1', null],
    ['1e3', null],
  ])('reads %j as %j', (host, expected) => {
    expect(looseIPv4(host)).toBe(expected);
  });
});
