import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isAlive } from '@keelson/platform';
import { claimAttempt, endEarlierAttempts, readCommandRecord, runCommand, settleRecords } from './commandProcess';

const root = join(__dirname, '..', '..', '..', '..');
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'keelson-command-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A worker stand-in that starts `script` under the supervisor and then never hears of it again. */
async function frozenOwner(record: string, script: string): Promise<ChildProcess> {
  const owner = spawn(process.execPath, ['-r', './scripts/register.js', 'temporal/test/commandOwner.ts', record, script], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  owner.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  await until('the owner to start the command', () => out.includes('started'), 30_000);
  return owner;
}

function killed(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

describe('a command node under its supervisor', () => {
  it('records its output and exit status, and reads them back as the attempt saw them', async () => {
    const record = join(dir, 'attempts', '1');
    const result = await runCommand({ argv: ['bash', '-c', 'echo out; echo err >&2; printf "%0.sx" $(seq 1 100); exit 3'], cwd: dir, env: process.env, timeoutMs: 10_000, signal: new AbortController().signal, maxOutputBytes: 50, record });
    expect(result).toMatchObject({ exitCode: 3, timedOut: false, cancelled: false, truncated: true, outputBytes: 108 });
    expect(result.output).toBe('x'.repeat(50));
    expect(await readFile(`${record}.log`, 'utf8')).toMatch(/^out\nerr\nx{100}$/);
    expect(await readCommandRecord(record, 50)).toEqual({ exitCode: 3, output: 'x'.repeat(50), outputBytes: 108, truncated: true });
    // The record is the supervisor's own: the command never sees where it is written.
    const env = await runCommand({ argv: ['bash', '-c', 'echo "[$KEELSON_NODE_RECORD]"'], cwd: dir, env: process.env, timeoutMs: 10_000, signal: new AbortController().signal, maxOutputBytes: 1024, record: join(dir, 'attempts', '2') });
    expect(env.output).toBe('[]\n');
  });

  it('has no record while the command runs, and none after a timeout kills it mid-way', async () => {
    const record = join(dir, 'r');
    const running = runCommand({ argv: ['bash', '-c', 'echo begun; sleep 30; echo never'], cwd: dir, env: process.env, timeoutMs: 1_500, signal: new AbortController().signal, maxOutputBytes: 1024, record });
    await until('the command to begin', () => existsSync(`${record}.log`));
    expect(await readCommandRecord(record, 1024)).toBeUndefined();
    const result = await running;
    expect(result.timedOut).toBe(true);
    expect(result.output).toBe('begun\n');
    // The group was killed, the supervisor with it: it wrote no exit status.
    expect(await readCommandRecord(record, 1024)).toBeUndefined();
  });

  it('keeps the exit status of a command that ended while its worker was frozen, after the worker is killed', async () => {
    const record = join(dir, 'attempts', '1');
    const owner = await frozenOwner(record, 'echo done-by-attempt-1; exit 0');
    await until('the supervisor to record the exit', () => existsSync(`${record}.exit`));
    await killed(owner);
    expect(await readCommandRecord(record, 1024)).toEqual({ exitCode: 0, output: 'done-by-attempt-1\n', outputBytes: 18, truncated: false });
  });

  it('ends the group of a command still running when its worker dies, leaving no exit status', async () => {
    const record = join(dir, 'attempts', '1');
    const owner = await frozenOwner(record, 'echo $$ > "$0.pid"; sleep 30; echo late' .replace('$0.pid', `${record}.pid`));
    await until('the command to write its pid', async () => (await readFile(`${record}.pid`, 'utf8').catch(() => '')).trim() !== '');
    const commandPid = Number((await readFile(`${record}.pid`, 'utf8')).trim());
    expect(isAlive(commandPid)).toBe(true);
    await killed(owner);
    // The watchdog polls its owner once a second.
    await until('the watchdog to end the group', () => !isAlive(commandPid), 5_000);
    expect(await readCommandRecord(record, 1024)).toBeUndefined();
    expect(await readFile(`${record}.log`, 'utf8')).not.toContain('late');
  });

  it('starts nothing for an attempt that reaches its spawn after a later attempt began', async () => {
    const records = join(dir, 'attempts');
    const effect = join(dir, 'effect');
    await claimAttempt(records, 1);
    await claimAttempt(records, 2);
    const late = await runCommand({ argv: ['bash', '-c', `echo acted >> ${effect}`], cwd: dir, env: process.env, timeoutMs: 10_000, signal: new AbortController().signal, maxOutputBytes: 1024, record: join(records, '1') });
    expect(late).toMatchObject({ superseded: true, exitCode: 75 });
    expect(existsSync(effect)).toBe(false);
    expect(await readCommandRecord(join(records, '1'), 1024)).toBeUndefined();
    // The current attempt runs; a command of its own that exits 75 is not taken for superseded.
    const current = await runCommand({ argv: ['bash', '-c', `echo acted >> ${effect}; exit 75`], cwd: dir, env: process.env, timeoutMs: 10_000, signal: new AbortController().signal, maxOutputBytes: 1024, record: join(records, '2') });
    expect(current).toMatchObject({ superseded: false, exitCode: 75 });
    expect(await readFile(effect, 'utf8')).toBe('acted\n');
    // Settling lets the logs and exit statuses go and keeps the marks, so attempt 1 still starts nothing.
    await settleRecords(records);
    expect((await readdir(records)).sort()).toEqual(['1.start', '2.start']);
    expect((await runCommand({ argv: ['bash', '-c', `echo acted >> ${effect}`], cwd: dir, env: process.env, timeoutMs: 10_000, signal: new AbortController().signal, maxOutputBytes: 1024, record: join(records, '1') })).superseded).toBe(true);
    expect(await readFile(effect, 'utf8')).toBe('acted\n');
  });

  it('ends an earlier attempt that had already started when a later one claims the node', async () => {
    const records = join(dir, 'attempts');
    const effect = join(dir, 'effect');
    await claimAttempt(records, 1);
    const owner = await frozenOwner(join(records, '1'), `echo $$ > ${records}/1.pid; sleep 30; echo late >> ${effect}`);
    try {
      await until('attempt 1 to start its command', async () => (await readFile(join(records, '1.pid'), 'utf8').catch(() => '')).trim() !== '');
      const commandPid = Number((await readFile(join(records, '1.pid'), 'utf8')).trim());
      await claimAttempt(records, 2);
      expect(await endEarlierAttempts(records, 2)).toBe(1);
      await until('attempt 1 to be gone', () => !isAlive(commandPid), 5_000);
      expect(existsSync(effect)).toBe(false);
      expect(await endEarlierAttempts(records, 2)).toBe(0);
    } finally {
      await killed(owner);
    }
  });
});
