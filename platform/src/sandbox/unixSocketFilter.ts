import { createHash } from 'node:crypto';
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A classic-BPF seccomp program, in the form bwrap's `--seccomp FD` loads (an array of
 * `struct sock_filter`), that refuses creating `AF_UNIX` sockets: `socket(AF_UNIX, …)` fails with
 * EAFNOSUPPORT. Seccomp cannot see a path, so it is all or nothing; `socketpair` (which reaches no
 * one) stays allowed. A system call of another ABI than the native one (32-bit `socketcall`, x32)
 * fails with EPERM, so no other door to `socket` is left open.
 */

const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_JGE_K = 0x35;
const BPF_RET_K = 0x06;
const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO = 0x00050000;
const EPERM = 1;
const EAFNOSUPPORT = 97;
const AF_UNIX = 1;
/** `struct seccomp_data`: nr at 0, arch at 4, args[0] (low half, little-endian) at 16. */
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
const OFFSET_ARG0 = 16;
const X32_SYSCALL_BIT = 0x40000000;

/** The architectures the filter is built for: audit arch and the `socket` system call number. */
const ARCHES: Record<string, { audit: number; socket: number; x32: boolean }> = {
  x64: { audit: 0xc000003e, socket: 41, x32: true },
  arm64: { audit: 0xc00000b7, socket: 198, x32: false },
};

type Insn = [code: number, jt: number, jf: number, k: number];

/** The program for `arch` (Node's `process.arch`), or undefined where none is built. */
export function unixSocketFilter(arch: string = process.arch): Buffer | undefined {
  const a = ARCHES[arch];
  if (!a) return undefined;
  // Labels are resolved by hand: jt/jf count the instructions skipped after the jump.
  const program: Insn[] = [
    [BPF_LD_W_ABS, 0, 0, OFFSET_ARCH],
    [BPF_JEQ_K, 0, a.x32 ? 7 : 6, a.audit], // foreign ABI → DENY_ALL
    [BPF_LD_W_ABS, 0, 0, OFFSET_NR],
    ...(a.x32 ? ([[BPF_JGE_K, 5, 0, X32_SYSCALL_BIT]] as Insn[]) : []), // x32 → DENY_ALL
    [BPF_JEQ_K, 0, 2, a.socket], // not socket → ALLOW
    [BPF_LD_W_ABS, 0, 0, OFFSET_ARG0],
    [BPF_JEQ_K, 1, 0, AF_UNIX], // AF_UNIX → DENY_UNIX
    [BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW], // ALLOW
    [BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EAFNOSUPPORT], // DENY_UNIX
    [BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM], // DENY_ALL
  ];
  const out = Buffer.alloc(program.length * 8);
  program.forEach(([code, jt, jf, k], i) => {
    out.writeUInt16LE(code, i * 8);
    out.writeUInt8(jt, i * 8 + 2);
    out.writeUInt8(jf, i * 8 + 3);
    out.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return out;
}

/**
 * The filter written once to a file named by its content (so concurrent writers agree), for the
 * shell that opens it as bwrap's `--seccomp` descriptor; undefined where no filter is built.
 */
export function unixSocketFilterFile(dir: string = tmpdir()): string | undefined {
  const program = unixSocketFilter();
  if (!program) return undefined;
  const path = join(dir, `keelson-seccomp-no-unix-${createHash('sha256').update(program).digest('hex').slice(0, 16)}.bpf`);
  if (!existsSync(path)) {
    const partial = `${path}.${process.pid}.partial`;
    writeFileSync(partial, program, { mode: 0o644 });
    renameSync(partial, path);
  }
  return path;
}

/** The descriptor the filter is handed to bwrap on. */
export const SECCOMP_FD = 9;

/**
 * `bwrapArgv`'s command run with the filter: a shell opens the filter file on {@link SECCOMP_FD}
 * and execs bwrap with `--seccomp` (bwrap reads the descriptor itself and installs the filter for
 * the sandboxed command only).
 */
export function withUnixSocketFilter(argv: readonly string[], filterPath: string): string[] {
  const [bwrap, ...rest] = argv;
  return ['/bin/sh', '-c', `exec "$@" ${SECCOMP_FD}<"$0"`, filterPath, bwrap!, '--seccomp', String(SECCOMP_FD), ...rest];
}
