import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { SECCOMP_FD, seccompFilter, seccompFilterFile, withSeccompFilter } from './seccompFilter';

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

describe('seccompFilterFile', () => {
  it('removes its private folder when the process exits, registering that once however often the folder is made', () => {
    const before = process.listeners('exit');
    const first = seccompFilterFile({ denyUnixSockets: false })!;
    const added = process.listeners('exit').filter((l) => !before.includes(l));
    expect(added).toHaveLength(1);
    rmSync(dirname(first), { recursive: true, force: true });
    const again = seccompFilterFile({ denyUnixSockets: false })!;
    expect(dirname(again)).not.toBe(dirname(first));
    expect(process.listeners('exit').filter((l) => !before.includes(l))).toHaveLength(1);
    const cleanup = added[0]! as (code: number) => void;
    process.removeListener('exit', cleanup);
    cleanup(0);
    expect(existsSync(dirname(again))).toBe(false);
    // A second exit handler run (or a folder already swept) finds nothing to remove and does not throw.
    expect(() => cleanup(0)).not.toThrow();
  });

  it('writes each variant once, owner-only, holding exactly the program it names', () => {
    const base = seccompFilterFile({ denyUnixSockets: false })!;
    const noUnix = seccompFilterFile({ denyUnixSockets: true })!;
    expect(base).not.toBe(noUnix);
    expect(basename(base)).toBe('base.bpf');
    expect(basename(noUnix)).toBe('no-unix.bpf');
    expect(dirname(base)).toBe(dirname(noUnix));
    expect(basename(dirname(base))).toMatch(/^keelson-seccomp-/);
    expect(statSync(dirname(base)).mode & 0o777).toBe(0o700);
    expect(statSync(base).mode & 0o777).toBe(0o600);
    expect(readFileSync(base).equals(seccompFilter({ denyUnixSockets: false })!)).toBe(true);
    expect(readFileSync(noUnix).equals(seccompFilter({ denyUnixSockets: true })!)).toBe(true);
    const written = statSync(base).mtimeMs;
    expect(seccompFilterFile({ denyUnixSockets: false })).toBe(base);
    expect(statSync(base).mtimeMs).toBe(written);
  });

  it('writes the file again, in a new private folder, when something swept the old one away', () => {
    const before = seccompFilterFile({ denyUnixSockets: true })!;
    rmSync(dirname(before), { recursive: true, force: true });
    const after = seccompFilterFile({ denyUnixSockets: true })!;
    expect(existsSync(after)).toBe(true);
    expect(readFileSync(after).equals(seccompFilter({ denyUnixSockets: true })!)).toBe(true);
  });
});

describe('withSeccompFilter', () => {
  it('has a shell open the filter on descriptor 9 and exec bwrap with --seccomp 9 before the rest of its arguments', () => {
    expect(withSeccompFilter(['/usr/bin/bwrap', '--ro-bind', '/', '/', '--', 'true'], '/tmp/k/base.bpf')).toEqual([
      '/bin/sh', '-c', 'exec "$@" 9<"$0"', '/tmp/k/base.bpf', '/usr/bin/bwrap', '--seccomp', '9', '--ro-bind', '/', '/', '--', 'true',
    ]);
    expect(SECCOMP_FD).toBe(9);
  });
});

describe('the seccomp assembler', () => {
  it('encodes each instruction as a little-endian sock_filter: code, jt, jf, k', () => {
    const program = seccompFilter({ denyUnixSockets: false }, 'arm64')!;
    // ld arch; jeq AUDIT_ARCH_AARCH64 (else to the EPERM return); ld nr; jeq 117, 270, 271, 438 → EPERM; ret ALLOW; ret EAFNOSUPPORT; ret EPERM
    expect(program.length).toBe(10 * 8);
    const insn = (i: number) => [program.readUInt16LE(i * 8), program.readUInt8(i * 8 + 2), program.readUInt8(i * 8 + 3), program.readUInt32LE(i * 8 + 4)];
    expect(insn(0)).toEqual([0x20, 0, 0, 4]);
    expect(insn(1)).toEqual([0x15, 0, 7, 0xc00000b7]);
    expect(insn(2)).toEqual([0x20, 0, 0, 0]);
    expect(insn(3)).toEqual([0x15, 5, 0, 117]);
    expect(insn(6)).toEqual([0x15, 2, 0, 438]);
    expect(insn(7)).toEqual([0x06, 0, 0, 0x7fff0000]);
    expect(insn(8)).toEqual([0x06, 0, 0, 0x00050000 | 97]);
    expect(insn(9)).toEqual([0x06, 0, 0, 0x00050000 | 1]);
  });
});
