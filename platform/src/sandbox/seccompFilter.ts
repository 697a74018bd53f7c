import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The sandbox's seccomp program, in the form bwrap's `--seccomp FD` loads (an array of classic-BPF
 * `struct sock_filter`). Always: no `ptrace`, `process_vm_readv`/`writev` or `pidfd_getfd` (nothing
 * inside reads or drives another process's memory or descriptors, bwrap's own init included), and a
 * system call of another ABI than the native one (32-bit, x32) fails, so no other door to those is
 * left open — all with EPERM. Without the network, also no `AF_UNIX` socket: `socket(AF_UNIX, …)`
 * fails with EAFNOSUPPORT (seccomp cannot see a path, so it is all or nothing; `socketpair`, which
 * reaches no one, stays allowed).
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

interface Arch {
  /** `AUDIT_ARCH_*` */
  audit: number;
  /** x32 system calls share the native audit arch and are told apart by a bit of the number. */
  x32: boolean;
  socket: number;
  /** ptrace, process_vm_readv, process_vm_writev, pidfd_getfd */
  denied: readonly number[];
}

/** The architectures a filter is built for (Node's `process.arch`). */
const ARCHES: Record<string, Arch> = {
  x64: { audit: 0xc000003e, x32: true, socket: 41, denied: [101, 310, 311, 438] },
  arm64: { audit: 0xc00000b7, x32: false, socket: 198, denied: [117, 270, 271, 438] },
};

export interface SeccompOptions {
  /** Refuse creating AF_UNIX sockets (a sandbox without the network). */
  denyUnixSockets: boolean;
}

/** One instruction; a jump names the labels it goes to (`next` falls through). */
type Insn = { code: number; k: number; jt?: string; jf?: string } | { label: string };

function assemble(source: Insn[]): Buffer {
  const code = source.filter((i): i is Exclude<Insn, { label: string }> => !('label' in i));
  const at = new Map<string, number>();
  let n = 0;
  for (const i of source) {
    if ('label' in i) at.set(i.label, n);
    else n++;
  }
  const offset = (from: number, label: string | undefined): number => {
    if (label === undefined || label === 'next') return 0;
    const to = at.get(label);
    if (to === undefined || to <= from || to - from - 1 > 255) throw new Error(`seccomp: bad jump to ${label}`);
    return to - from - 1;
  };
  const out = Buffer.alloc(code.length * 8);
  code.forEach((i, idx) => {
    out.writeUInt16LE(i.code, idx * 8);
    out.writeUInt8(offset(idx, i.jt), idx * 8 + 2);
    out.writeUInt8(offset(idx, i.jf), idx * 8 + 3);
    out.writeUInt32LE(i.k >>> 0, idx * 8 + 4);
  });
  return out;
}

/** The program for `arch`, or undefined where none is built. */
export function seccompFilter(options: SeccompOptions, arch: string = process.arch): Buffer | undefined {
  const a = ARCHES[arch];
  if (!a) return undefined;
  return assemble([
    { code: BPF_LD_W_ABS, k: OFFSET_ARCH },
    { code: BPF_JEQ_K, k: a.audit, jf: 'eperm' },
    { code: BPF_LD_W_ABS, k: OFFSET_NR },
    ...(a.x32 ? [{ code: BPF_JGE_K, k: X32_SYSCALL_BIT, jt: 'eperm' }] : []),
    ...a.denied.map((nr) => ({ code: BPF_JEQ_K, k: nr, jt: 'eperm' })),
    ...(options.denyUnixSockets
      ? [
          { code: BPF_JEQ_K, k: a.socket, jf: 'allow' },
          { code: BPF_LD_W_ABS, k: OFFSET_ARG0 },
          { code: BPF_JEQ_K, k: AF_UNIX, jt: 'eafnosupport' },
        ]
      : []),
    { label: 'allow' },
    { code: BPF_RET_K, k: SECCOMP_RET_ALLOW },
    { label: 'eafnosupport' },
    { code: BPF_RET_K, k: SECCOMP_RET_ERRNO | EAFNOSUPPORT },
    { label: 'eperm' },
    { code: BPF_RET_K, k: SECCOMP_RET_ERRNO | EPERM },
  ]);
}

let privateDir: string | undefined;
const written = new Map<string, string>();

/**
 * The filter written to a file in a directory of this process's own (`mkdtemp`: mode 0700, a name
 * nobody can guess or plant first), once per variant, for the shell that opens it as bwrap's
 * `--seccomp` descriptor; removed when the process exits. Undefined where no filter is built.
 */
export function seccompFilterFile(options: SeccompOptions): string | undefined {
  const key = options.denyUnixSockets ? 'no-unix' : 'base';
  const known = written.get(key);
  if (known && existsSync(known)) return known;
  const program = seccompFilter(options);
  if (!program) return undefined;
  if (!privateDir || !existsSync(privateDir)) {
    // Made again if something swept the temp folder while this process ran.
    const dir = mkdtempSync(join(tmpdir(), 'keelson-seccomp-'));
    if (!privateDir) process.once('exit', () => privateDir && rmSync(privateDir, { recursive: true, force: true }));
    privateDir = dir;
  }
  const path = join(privateDir, `${key}.bpf`);
  writeFileSync(path, program, { mode: 0o600 });
  written.set(key, path);
  return path;
}

/** The descriptor the filter is handed to bwrap on. */
export const SECCOMP_FD = 9;

/**
 * `bwrapArgv`'s command run with the filter: a shell opens the filter file on {@link SECCOMP_FD}
 * and execs bwrap with `--seccomp` (bwrap reads the descriptor itself and installs the filter for
 * the sandboxed command only).
 */
export function withSeccompFilter(argv: readonly string[], filterPath: string): string[] {
  const [bwrap, ...rest] = argv;
  return ['/bin/sh', '-c', `exec "$@" ${SECCOMP_FD}<"$0"`, filterPath, bwrap!, '--seccomp', String(SECCOMP_FD), ...rest];
}
