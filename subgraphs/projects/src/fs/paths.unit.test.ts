import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mkdirTracked, removeCreatedTree } from './paths';

/** What a create or clone removes when it fails: its own folders, never what a concurrent one put beside them. */
describe('removeCreatedTree', () => {
  let tmp: string;
  beforeEach(() => {
    tmp = realpathSync(mkdtempSync(join(tmpdir(), 'keelson-created-')));
  });
  afterEach(() => {
    rmSync(tmp, { recursive: true, force: true });
  });

  it('removes the folder with what it holds and every parent the same mkdir created', async () => {
    const root = join(tmp, 'ws', 'team', 'app');
    const top = await mkdirTracked(root);
    expect(top).toBe(join(tmp, 'ws'));
    writeFileSync(join(root, 'README'), 'x');
    await expect(removeCreatedTree(root, top)).resolves.toBeUndefined();
    expect(readdirSync(tmp)).toEqual([]);
  });

  it('keeps a created parent that a concurrent create put its project in, and all above it', async () => {
    const root = join(tmp, 'ws', 'team', 'app');
    const top = await mkdirTracked(root);
    // Another create, after this one made the workspace root, put its project beside it.
    expect(await mkdirTracked(join(tmp, 'ws', 'team', 'other'))).toBe(join(tmp, 'ws', 'team', 'other'));
    await expect(removeCreatedTree(root, top)).resolves.toBeUndefined();
    expect([existsSync(root), readdirSync(join(tmp, 'ws', 'team'))]).toEqual([false, ['other']]);
  });

  it('removes the parents that are empty up to the first one that is not', async () => {
    const root = join(tmp, 'ws', 'team', 'app');
    const top = await mkdirTracked(root);
    writeFileSync(join(tmp, 'ws', 'notes'), 'kept');
    await expect(removeCreatedTree(root, top)).resolves.toBeUndefined();
    expect(readdirSync(join(tmp, 'ws'))).toEqual(['notes']);
  });

  it('removes only the folder when no parent was created (top undefined or the folder itself)', async () => {
    mkdirSync(join(tmp, 'ws'));
    const root = join(tmp, 'ws', 'app');
    const top = await mkdirTracked(root);
    expect(top).toBe(root);
    await expect(removeCreatedTree(root, top)).resolves.toBeUndefined();
    expect([existsSync(join(tmp, 'ws')), existsSync(root)]).toEqual([true, false]);
    mkdirSync(root);
    await expect(removeCreatedTree(root, undefined)).resolves.toBeUndefined();
    expect([existsSync(join(tmp, 'ws')), existsSync(root)]).toEqual([true, false]);
  });

  it('never climbs above the first created folder, even when those above are empty', async () => {
    mkdirSync(join(tmp, 'empty', 'above'), { recursive: true });
    const root = join(tmp, 'empty', 'above', 'ws', 'app');
    const top = await mkdirTracked(root);
    await expect(removeCreatedTree(root, top)).resolves.toBeUndefined();
    expect([existsSync(join(tmp, 'empty', 'above')), existsSync(join(tmp, 'empty', 'above', 'ws'))]).toEqual([true, false]);
  });

  it('goes on past a folder already gone, and reports a parent it cannot remove instead of throwing', async () => {
    const root = join(tmp, 'ws', 'team', 'app');
    const top = await mkdirTracked(root);
    rmSync(root, { recursive: true });
    await expect(removeCreatedTree(root, top)).resolves.toBeUndefined();
    expect(readdirSync(tmp)).toEqual([]);
    // A parent that is no longer a folder (a symlink put there meanwhile): said, not thrown, nothing above it touched.
    mkdirSync(join(tmp, 'elsewhere', 'app'), { recursive: true });
    mkdirSync(join(tmp, 'ws'));
    symlinkSync(join(tmp, 'elsewhere'), join(tmp, 'ws', 'team'));
    await expect(removeCreatedTree(root, top)).resolves.toMatch(new RegExp(`^cleanup of ${join(tmp, 'ws', 'team')} failed: ENOTDIR`));
    expect([readdirSync(join(tmp, 'ws')), readdirSync(join(tmp, 'elsewhere'))]).toEqual([['team'], []]);
  });
});
