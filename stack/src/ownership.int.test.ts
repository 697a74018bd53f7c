import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGroupProcess } from '@keelson/harness';
import { findOrphanGroups, isAlive, setSupervisorOwner } from '@keelson/platform';
import { processesCheck } from './doctor';
import { claimHome, readLastStart, recordStart } from './ownership';

/**
 * A process group shaped as a supervisor of `home` (`sh -c … keelson-turn:<home> <owner> <argv…>`; a
 * node's carries its attempt's record before the argv), sleeping.
 */
function fakeGroup(marker: string, ownerPid: number): number {
  const record = marker.startsWith('keelson-node:') ? [join(tmpdir(), 'attempts', 'a', '1')] : [];
  const child = spawn('/bin/sh', ['-c', 'sleep 60 & wait', marker, String(ownerPid), ...record, 'echo', 'hi'], { detached: true, stdio: 'ignore' });
  child.unref();
  return child.pid!;
}

/** The pid of a process that already exited. */
function deadPid(): number {
  return spawnSync('/bin/sh', ['-c', 'echo $$'], { encoding: 'utf8' }).stdout.trim() as unknown as number;
}

describe('process ownership on a Keelson home', () => {
  const home = mkdtempSync(join(tmpdir(), 'keelson-own-'));
  const groups: number[] = [];
  afterAll(() => {
    for (const g of groups) {
      try {
        process.kill(-g, 'SIGKILL');
      } catch {
        // gone
      }
    }
    setSupervisorOwner(undefined);
    rmSync(home, { recursive: true, force: true });
  });

  it('ends the groups whose owner is gone, and only those of this home', async () => {
    const orphan = fakeGroup(`keelson-node:${home}`, Number(deadPid()));
    const owned = fakeGroup(`keelson-turn:${home}`, process.pid);
    const foreign = fakeGroup(`keelson-node:${home}-other`, Number(deadPid()));
    groups.push(orphan, owned, foreign);
    await new Promise((r) => setTimeout(r, 100));
    expect((await findOrphanGroups(home)).map((o) => o.pgid)).toEqual([orphan]);

    const ended = await claimHome(home);
    expect(ended).toEqual([{ what: 'bash/script node group', pid: orphan, outcome: 'ended', detail: expect.stringMatching(/^owner pid \d+ gone; ran echo hi$/) }]);
    expect(isAlive(orphan)).toBe(false);
    expect(isAlive(owned)).toBe(true);
    expect(isAlive(foreign)).toBe(true);

    await recordStart(home, [...ended, { what: 'Temporal dev server', pid: 42, outcome: 'adopted' }]);
    expect((await readLastStart(home))?.processes).toHaveLength(2);
    const line = await processesCheck(home);
    expect(line.status).toBe('ok');
    expect(line.detail).toMatch(new RegExp(`ended bash/script node group pid ${orphan}; adopted Temporal dev server pid 42`));
  });

  it('marks the harness CLI supervisor with the home once claimed, so doctor sees its orphan', async () => {
    // claimHome above set the owner home: a CLI group started now carries it on its command line.
    const group = startGroupProcess({ argv: ['/bin/sleep', '30'], cwd: home, env: { PATH: '/usr/bin:/bin' } });
    groups.push(group.pgid);
    const argv = readFileSync(`/proc/${group.pgid}/cmdline`, 'utf8').split('\0');
    expect(argv.slice(3, 5)).toEqual([`keelson-turn:${home}`, String(process.pid)]);
    expect(await findOrphanGroups(home)).toEqual([]);
    const orphan = fakeGroup(`keelson-turn:${home}`, Number(deadPid()));
    groups.push(orphan);
    await new Promise((r) => setTimeout(r, 100));
    expect(await processesCheck(home)).toMatchObject({ status: 'warn', detail: expect.stringContaining(`1 orphaned group(s) a crash left (turn pgid ${orphan})`) });
    await group.kill(100);
    await group.exited;
  });
});
