import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MeshError } from '@keelson/schema';
import { allowedProjectRoot, forbiddenRootReason } from './projectRoot';

describe('project roots', () => {
  it.each([
    ['/', '/home/me/.keelson', 'is the filesystem root'],
    ['/home/me/.keelson', '/home/me/.keelson', 'is the Keelson home (KEELSON_HOME)'],
    ['/home/me/.keelson/worktrees/x', '/home/me/.keelson', 'is inside the Keelson home (KEELSON_HOME, /home/me/.keelson)'],
    ['/home/me', '/home/me/.keelson', 'contains the Keelson home (KEELSON_HOME, /home/me/.keelson)'],
    ['/home', '/home/me/.keelson', 'contains the Keelson home (KEELSON_HOME, /home/me/.keelson)'],
    ['/home/me/code/app', '/home/me/.keelson', null],
    ['/home/me/.keelson-projects', '/home/me/.keelson', null],
    ['/home/me/.keel', '/home/me/.keelson', null],
    ['/srv/keelson/x', '/srv/keelson-home', null],
  ])('%s with KEELSON_HOME %s: %s', (root, home, reason) => {
    expect(forbiddenRootReason(root, home)).toBe(reason);
  });

  describe('canonicalized before the rule', () => {
    let tmp: string;
    let home: string;
    beforeAll(() => {
      tmp = realpathSync(mkdtempSync(join(tmpdir(), 'keelson-roots-')));
      home = join(tmp, 'home', '.keelson');
      mkdirSync(join(home, 'harness'), { recursive: true });
      mkdirSync(join(tmp, 'work'));
      symlinkSync(home, join(tmp, 'work', 'alias'));
      symlinkSync(tmp, join(tmp, 'work', 'up'));
    });
    afterAll(() => rmSync(tmp, { recursive: true, force: true }));

    const refusal = async (root: string) => {
      const err = await allowedProjectRoot(root, home, 'input.rootPath').then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(MeshError);
      expect((err as MeshError).code).toBe('BAD_USER_INPUT');
      return (err as MeshError).message;
    };

    it('refuses the home through a trailing slash, "..", or a symlink, and paths inside it that do not exist yet', async () => {
      expect(await refusal(`${home}/`)).toContain('is the Keelson home (KEELSON_HOME)');
      expect(await refusal(join(home, 'harness', '..'))).toContain('is the Keelson home');
      expect(await refusal(`${home}/harness/../../.keelson/new-project`)).toContain('is inside the Keelson home');
      expect(await refusal(join(tmp, 'work', 'alias'))).toBe(
        `input.rootPath: ${join(tmp, 'work', 'alias')} (${home}) is the Keelson home (KEELSON_HOME); a project root must lie outside the Keelson home — neither in it nor above it — which holds the mesh's own state (credentials key, CLI homes, worktrees)`,
      );
      expect(await refusal(join(tmp, 'work', 'alias', 'not-yet', 'deeper'))).toContain('is inside the Keelson home');
      expect(await refusal(join(tmp, 'work', 'up'))).toContain('contains the Keelson home');
      expect(await refusal(join(tmp, 'home'))).toContain('contains the Keelson home');
      expect(await refusal('/')).toContain('is the filesystem root');
    });

    it('resolves `..` as the kernel does: after a symlink, from its target; after a missing name, back into real folders', async () => {
      // work/harness-link/.. is the home (the parent of the link's target), not work/ as a lexical `..` says.
      symlinkSync(join(home, 'harness'), join(tmp, 'work', 'harness-link'));
      expect(await refusal(join(tmp, 'work', 'harness-link') + '/..')).toContain('is the Keelson home');
      expect(await refusal(`${join(tmp, 'work')}/nope/../harness-link/../new-project`)).toContain('is inside the Keelson home');
      // A loop is a clear refusal too.
      symlinkSync(join(tmp, 'work', 'loop'), join(tmp, 'work', 'loop'));
      expect(await refusal(join(tmp, 'work', 'loop', 'x'))).toMatch(/too many levels of symbolic links/);
    });

    it('accepts a folder beside the home, canonical', async () => {
      expect(await allowedProjectRoot(join(tmp, 'work', 'app'), home, 'input.rootPath')).toBe(join(tmp, 'work', 'app'));
      expect(await allowedProjectRoot(join(tmp, 'work', 'up', 'work', 'app') + '/', home, 'input.rootPath')).toBe(join(tmp, 'work', 'app'));
    });
  });
});
