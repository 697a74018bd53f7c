import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { groupAlive, startGroupProcess, waitGroupEmpty } from './groupProcess';

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

async function drain(lines: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const l of lines) out.push(l);
  return out;
}

describe('a CLI in its own process group', () => {
  it('streams stdout by line and reports the exit code', async () => {
    const p = startGroupProcess({ argv: ['/bin/sh', '-c', 'echo one; echo two >&2; echo three; exit 3'], cwd: '/', env });
    expect(await drain(p.lines)).toEqual(['one', 'three']);
    expect(await p.exited).toEqual({ code: 3, signal: null });
    expect(p.stderr()).toContain('two');
  });

  it('keeps every line for a reader that begins after the CLI exited and its output closed, and then ends', async () => {
    const p = startGroupProcess({ argv: ['/bin/sh', '-c', 'echo one; echo two; exit 0'], cwd: '/', env });
    // `exited` resolves once stdout has closed: everything the CLI wrote was emitted before reading begins.
    expect(await p.exited).toEqual({ code: 0, signal: null });
    let timer: NodeJS.Timeout | undefined;
    const hung = new Promise<string>((resolve) => (timer = setTimeout(() => resolve('the lines never ended'), 5000)));
    try {
      expect(await Promise.race([drain(p.lines), hung])).toEqual(['one', 'two']);
    } finally {
      clearTimeout(timer);
    }
  });

  it('kills the whole group on kill(), grandchildren included', async () => {
    const p = startGroupProcess({ argv: ['/bin/sh', '-c', 'sleep 60 & sleep 60 & echo started; wait'], cwd: '/', env });
    const it = p.lines[Symbol.asyncIterator]();
    expect((await it.next()).value).toBe('started');
    expect(groupAlive(p.pgid)).toBe(true);
    await p.kill(500);
    expect(groupAlive(p.pgid)).toBe(false);
    await p.exited;
  });

  it('leaves nothing behind when the CLI exits: stragglers in its group are killed', async () => {
    const p = startGroupProcess({ argv: ['/bin/sh', '-c', '(sleep 60 &) ; echo done'], cwd: '/', env });
    expect(await drain(p.lines)).toEqual(['done']);
    await p.exited;
    expect(groupAlive(p.pgid)).toBe(false);
  });

  it('does not wait on a process that left the group and holds stdout: the lines end and the exit is reported', async () => {
    const marker = `keelson-escapee-${process.pid}-${Date.now()}`;
    const left = join(mkdtempSync(join(tmpdir(), 'keelson-escapee-')), 'left');
    // The leader exits only once the escapee has left the group (it writes `left` after setsid):
    // exiting earlier would let the group kill take it while still a member, and nothing is held open.
    const script = `setsid sh -c 'echo > ${left}; sleep 30; : ${marker}' & while [ ! -e ${left} ]; do sleep 0.01; done; echo done; exit 4`;
    const p = startGroupProcess({ argv: ['/bin/sh', '-c', script], cwd: '/', env, drainMs: 300 });
    const started = Date.now();
    const [lines, exit] = await Promise.all([drain(p.lines), p.exited]);
    expect(lines).toEqual(['done']);
    expect(exit).toEqual({ code: 4, signal: null, outputHeldOpen: true });
    expect(Date.now() - started).toBeLessThan(10_000);
    spawn('pkill', ['-f', marker], { stdio: 'ignore' });
    rmSync(dirname(left), { recursive: true, force: true });
  });

  it('is killed by its watchdog within about a second when its owner dies', async () => {
    const owner = spawn('/bin/sh', ['-c', 'sleep 0.5'], { stdio: 'ignore' });
    const p = startGroupProcess({ argv: ['/bin/sh', '-c', 'sleep 60'], cwd: '/', env, ownerPid: owner.pid });
    void drain(p.lines);
    expect(groupAlive(p.pgid)).toBe(true);
    expect(await waitGroupEmpty(p.pgid, 5000)).toBe(true);
    await p.exited;
  });
});
