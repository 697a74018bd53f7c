// A stand-in worker for commandProcess.int.test.ts: starts one command under the node supervisor,
// says so on stdout, then freezes its event loop (as a worker about to be SIGKILLed would never
// hear the command's end) until the test kills it.
import { runCommand } from '../src/activities/runs/commandProcess';

const [record, script] = process.argv.slice(2) as [string, string];
void runCommand({ argv: ['bash', '-c', script], cwd: process.cwd(), env: process.env, timeoutMs: 60_000, signal: new AbortController().signal, maxOutputBytes: 1024, record }).catch(() => undefined);
setTimeout(() => {
  process.stdout.write('started\n');
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 30_000);
}, 200);
