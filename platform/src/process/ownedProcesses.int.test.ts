import { spawn } from 'node:child_process';
import { carriesRun, isAlive, ownsProcess, processArgv, signalGroup } from './ownedProcesses';

describe('carriesRun: a marker found in a command line however its flag is spelled', () => {
  const dir = '/home/me/.keelson/rib-swarm/clickclack/data';

  it('finds a run of consecutive arguments, and a flag with its value in every spelling', () => {
    expect(carriesRun(['temporal', 'server', 'start-dev', '--port', '1'], ['server', 'start-dev'])).toBe(true);
    for (const argv of [
      ['clickclack', 'serve', '--data', dir],
      ['clickclack', 'serve', `--data=${dir}`],
      ['clickclack', 'serve', '-data', dir],
      ['clickclack', 'serve', `-data=${dir}`],
    ]) {
      expect(carriesRun(argv, ['--data', dir])).toBe(true);
    }
  });

  it('refuses another value, a value without its flag, a longer path, and runs out of order', () => {
    expect(carriesRun(['clickclack', 'serve', '--data', `${dir}2`], ['--data', dir])).toBe(false);
    expect(carriesRun(['clickclack', 'serve', `--data=${dir}/x`], ['--data', dir])).toBe(false);
    expect(carriesRun(['clickclack', 'serve', '--addr', dir], ['--data', dir])).toBe(false);
    expect(carriesRun(['clickclack', dir, '--data'], ['--data', dir])).toBe(false);
    expect(carriesRun(['temporal', 'start-dev', 'server'], ['server', 'start-dev'])).toBe(false);
  });
});

describe('ownsProcess: a recorded pid is ours only while its command line carries our markers', () => {
  it('owns a live process started with the marker, not one without it, and none once it is gone', async () => {
    const dir = `/tmp/keelson-owned-${process.pid}`;
    const child = spawn('sh', ['-c', 'sleep 30', 'sh', '--data', dir], { detached: true, stdio: 'ignore' });
    const exited = new Promise((r) => child.once('exit', r));
    try {
      expect(processArgv(child.pid!)).toEqual(['sh', '-c', 'sleep 30', 'sh', '--data', dir]);
      expect(ownsProcess(child.pid!, [['--data', dir]])).toBe(true);
      expect(ownsProcess(child.pid!, [['--data', `${dir}-other`]])).toBe(false);
      expect(ownsProcess(process.pid, [['--data', dir]])).toBe(false);
    } finally {
      signalGroup(child.pid!, 'SIGKILL');
    }
    await exited;
    expect(isAlive(child.pid!)).toBe(false);
    expect(ownsProcess(child.pid!, [['--data', dir]])).toBe(false);
    expect(ownsProcess(-1, [['--data', dir]])).toBe(false);
  });
});
