import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { confinedPath, listDir, readFileInside, within } from './confine';

describe('realpath confinement', () => {
  let dir: string;
  let root: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'keelson-confine-'));
    root = join(dir, 'root');
    await mkdir(join(root, 'sub'), { recursive: true });
    await writeFile(join(root, 'sub', 'ok.txt'), 'ok');
    await writeFile(join(dir, 'secret.txt'), 'secret');
    await symlink(join(dir, 'secret.txt'), join(root, 'escape.txt'));
    await symlink(dir, join(root, 'up'));
    await symlink(join(root, 'sub'), join(root, 'inside'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('resolves paths inside the root, existing or not yet created, through links that stay inside', async () => {
    expect(await confinedPath(root, 'sub/ok.txt')).toBe(join(root, 'sub', 'ok.txt'));
    expect(await confinedPath(root, 'inside/ok.txt')).toBe(join(root, 'sub', 'ok.txt'));
    expect(await confinedPath(root, 'new/deeper/file.txt')).toBe(join(root, 'new', 'deeper', 'file.txt'));
  });

  it.each(['../secret.txt', 'sub/../../secret.txt', 'escape.txt', 'up/secret.txt', 'up/root/../secret.txt'])('refuses %j with FORBIDDEN', async (p) => {
    await expect(confinedPath(root, p)).rejects.toMatchObject({ code: 'FORBIDDEN' });
  });

  it('refuses absolute paths outside, and a prefix that is not a parent', async () => {
    await expect(confinedPath(root, join(dir, 'secret.txt'))).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(within('/a/root', '/a/rootx/file')).toBe(false);
    expect(within('/a/root', '/a/root/x')).toBe(true);
  });

  it('reads store files only inside the store, and scans without following links', async () => {
    expect(await readFileInside(root, join(root, 'sub', 'ok.txt'))).toBe('ok');
    expect(await readFileInside(root, join(root, 'escape.txt'))).toBeNull();
    expect(await listDir(root, 'dir')).toEqual(['sub']);
    expect(await listDir(root, 'file')).toEqual([]);
    expect(await listDir(join(root, 'missing'), 'file')).toEqual([]);
  });
});
