import { seccompFilter } from './seccompFilter';

/** Runs a classic-BPF seccomp program (the subset it uses) on one system call; the action it returns. */
function run(program: Buffer, call: { arch: number; nr: number; arg0?: number }): string {
  const data = Buffer.alloc(64);
  data.writeUInt32LE(call.nr >>> 0, 0);
  data.writeUInt32LE(call.arch >>> 0, 4);
  data.writeUInt32LE((call.arg0 ?? 0) >>> 0, 16);
  let acc = 0;
  for (let pc = 0; pc < program.length / 8; pc++) {
    const code = program.readUInt16LE(pc * 8);
    const jt = program.readUInt8(pc * 8 + 2);
    const jf = program.readUInt8(pc * 8 + 3);
    const k = program.readUInt32LE(pc * 8 + 4);
    if (code === 0x20) acc = data.readUInt32LE(k);
    else if (code === 0x15) pc += acc === k ? jt : jf;
    else if (code === 0x35) pc += acc >= k ? jt : jf;
    else if (code === 0x06) {
      if (k === 0x7fff0000) return 'allow';
      if ((k & 0xffff0000) >>> 0 === 0x00050000) return `errno ${k & 0xffff}`;
      return `ret ${k.toString(16)}`;
    } else throw new Error(`unexpected instruction ${code.toString(16)} at ${pc}`);
  }
  throw new Error('fell off the end of the program');
}

const X64 = 0xc000003e;
const ARM64 = 0xc00000b7;
const I386 = 0x40000003;

describe('the sandbox seccomp program', () => {
  const x64 = { base: seccompFilter({ denyUnixSockets: false }, 'x64')!, noUnix: seccompFilter({ denyUnixSockets: true }, 'x64')! };

  it.each([
    ['read', 0],
    ['openat', 257],
    ['clone', 56],
    ['socketpair', 53],
  ])('lets ordinary system calls through (%s)', (_name, nr) => {
    for (const program of [x64.base, x64.noUnix]) expect(run(program, { arch: X64, nr, arg0: 1 })).toBe('allow');
  });

  it.each([
    ['ptrace', 101],
    ['process_vm_readv', 310],
    ['process_vm_writev', 311],
    ['pidfd_getfd', 438],
  ])('refuses %s with EPERM, with or without the network', (_name, nr) => {
    for (const program of [x64.base, x64.noUnix]) expect(run(program, { arch: X64, nr })).toBe('errno 1');
  });

  it('refuses AF_UNIX sockets (EAFNOSUPPORT) only without the network; other families pass', () => {
    expect(run(x64.noUnix, { arch: X64, nr: 41, arg0: 1 })).toBe('errno 97');
    expect(run(x64.base, { arch: X64, nr: 41, arg0: 1 })).toBe('allow');
    for (const family of [2, 10, 16]) expect(run(x64.noUnix, { arch: X64, nr: 41, arg0: family })).toBe('allow');
  });

  it('closes the other doors: a foreign ABI and x32 system calls fail', () => {
    for (const program of [x64.base, x64.noUnix]) {
      expect(run(program, { arch: I386, nr: 102, arg0: 1 })).toBe('errno 1');
      expect(run(program, { arch: X64, nr: 0x40000000 + 41, arg0: 1 })).toBe('errno 1');
    }
  });

  it('is built for arm64 with its own numbers, and for nothing it does not know', () => {
    const arm = seccompFilter({ denyUnixSockets: true }, 'arm64')!;
    expect(run(arm, { arch: ARM64, nr: 117 })).toBe('errno 1');
    expect(run(arm, { arch: ARM64, nr: 198, arg0: 1 })).toBe('errno 97');
    expect(run(arm, { arch: ARM64, nr: 101 })).toBe('allow'); // x64's ptrace number is another call here
    expect(run(arm, { arch: X64, nr: 0 })).toBe('errno 1');
    expect(seccompFilter({ denyUnixSockets: true }, 'ia32')).toBeUndefined();
  });
});
