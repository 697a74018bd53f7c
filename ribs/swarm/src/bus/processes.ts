import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** True while `pid` is a live process (a zombie does not count). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return true; // no /proc: kill(0) is all we know
  }
}

/** The argv of `pid` from `/proc/<pid>/cmdline`, undefined when /proc cannot tell. */
export function procArgv(pid: number): string[] | undefined {
  try {
    const raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    if (!raw) return undefined;
    return (raw.endsWith('\0') ? raw.slice(0, -1) : raw).split('\0');
  } catch {
    return undefined;
  }
}

/** The command line of `pid` as `ps -o command=` prints it (the fallback without /proc). */
function psCommand(pid: number): string | undefined {
  try {
    return execFileSync('ps', ['-o', 'command=', '-p', String(pid)], { encoding: 'utf8', timeout: 5000 }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether `pid` is a server this mesh started on `dataDir`: its command line carries exactly
 * `--data <dataDir>` (or `--data=<dataDir>`). A recorded pid alone proves nothing (the OS reuses
 * pids and the record outlives a crash); the check needs no HTTP, so it also finds a server that
 * stopped answering.
 */
export function ownsProcess(pid: number, dataDir: string): boolean {
  if (!Number.isInteger(pid) || pid <= 0 || !processAlive(pid)) return false;
  const argv = procArgv(pid);
  if (argv) return argv.some((arg, i) => (arg === '--data' || arg === '-data') && argv[i + 1] === dataDir) || argv.includes(`--data=${dataDir}`);
  const text = psCommand(pid);
  if (!text) return false;
  const padded = `${text} `;
  return padded.includes(`--data ${dataDir} `) || padded.includes(`--data=${dataDir} `);
}

/** Sends `signal` to the process group led by `pid` (falling back to the process alone). */
export function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}
