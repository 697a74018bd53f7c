import { existsSync, mkdirSync, mkdtempSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { snapshotTree } from '../../test/support/fsSnapshot';
import { envWithoutGit, git, testIdentity } from '../../test/support/gitFixtures';
import {
  expectData,
  PROJECT_FIELDS,
  startProjectsHarness,
  type Gql,
  type ProjectsHarness,
} from '../../test/support/projectsHarness';

// The integration project's `testTimeout` is not applied (jest-circus reads only the global one).
jest.setTimeout(60_000);

interface ProjectView {
  id: string;
  name: string;
  rootPath: string;
  createdAt: string;
  isGitRepo: boolean;
  headCommit: string | null;
}

const CREATE = `mutation ($input: CreateProjectInput!) { createProject(input: $input) { ${PROJECT_FIELDS} } }`;

let h: ProjectsHarness;
/** A fresh, existing directory beneath the temp root, for one test's fixtures. */
let scratch: (label: string) => string;

beforeAll(async () => {
  h = await startProjectsHarness();
  scratch = (label) => mkdtempSync(join(h.tmp, `${label}-`));
});
afterAll(() => h?.close());

function create(input: Record<string, unknown>, gql: Gql = h.gql) {
  return gql<{ createProject: ProjectView }>(CREATE, { input });
}

/** Runs a create that must succeed, asserting it appended exactly one PROJECT_CREATED event for it. */
async function createOk(input: Record<string, unknown>): Promise<ProjectView> {
  const seq = await h.lastSeq();
  const project = expectData(await create(input)).createProject;
  expect(await h.eventsSince(seq)).toEqual([{ type: 'PROJECT_CREATED', payload: { projectId: project.id } }]);
  return project;
}

/** Asserts `root` holds a fresh repository: one empty "Initialize project" commit by the test identity, no files. */
function expectInitialized(root: string, project: ProjectView) {
  const env = h.settings.gitEnv;
  expect(git(root, env, 'log', '--format=%an%n%ae%n%cn%n%ce%n%s')).toBe(
    [testIdentity.name, testIdentity.email, testIdentity.name, testIdentity.email, 'Initialize project'].join('\n'),
  );
  expect(git(root, env, 'ls-tree', '-r', '--name-only', 'HEAD')).toBe('');
  expect(readdirSync(root)).toEqual(['.git']);
  expect(project.isGitRepo).toBe(true);
  expect(project.headCommit).toBe(git(root, env, 'rev-parse', 'HEAD'));
}

describe('createProject: names', () => {
  it.each([
    ['an empty name', ''],
    ['a 65-character name', 'a'.repeat(65)],
    ['an uppercase letter', 'Demo'],
    ['a leading "-"', '-demo'],
    ['a leading "_"', '_demo'],
    ['a space', 'my demo'],
    ['a dot', 'my.demo'],
  ])('rejects %s with BAD_USER_INPUT and creates nothing', async (_label, name) => {
    const error = await h.expectRejectedUnchanged(() => create({ name }), 'BAD_USER_INPUT');
    expect(error.extensions?.status).toBe(400);
    expect(error.message).toContain('name');
  });

  it.each([
    ['a 64-character name', 'a'.repeat(64)],
    ['a single letter', 'a'],
    ['a leading digit', '0x'],
    ['"-" and "_" after the first character', 'a-b_c'],
  ])('accepts %s', async (_label, name) => {
    const project = await createOk({ name });
    expect(project.name).toBe(name);
    expect(project.rootPath).toBe(join(h.settings.workspaceRoot, name));
  });
});

describe('createProject: input and rootPath', () => {
  it('rejects an unknown input field with BAD_USER_INPUT and creates nothing', async () => {
    const error = await h.expectRejectedUnchanged(() => create({ name: 'extra-field', bogus: true }), 'BAD_USER_INPUT');
    expect(error.message).toContain('bogus');
    expect(existsSync(join(h.settings.workspaceRoot, 'extra-field'))).toBe(false);
  });

  it('defaults the root to <workspaceRoot>/<name>', async () => {
    const project = await createOk({ name: 'defaulted' });
    expect(project.rootPath).toBe(join(h.settings.workspaceRoot, 'defaulted'));
    expectInitialized(project.rootPath, project);
  });

  it('trims an explicit rootPath', async () => {
    const root = join(scratch('trim'), 'trimmed');
    const project = await createOk({ name: 'trimmed', rootPath: `  \t${root}  ` });
    expect(project.rootPath).toBe(root);
    expect(existsSync(root)).toBe(true);
  });

  it('expands a rootPath of "~" to the user home', async () => {
    const project = await createOk({ name: 'home-itself', rootPath: '~' });
    expect(project.rootPath).toBe(h.settings.userHome);
    expectInitialized(h.settings.userHome, project);
  });

  it('expands a leading "~/" against the user home', async () => {
    const project = await createOk({ name: 'home-child', rootPath: '~/code/child' });
    expect(project.rootPath).toBe(join(h.settings.userHome, 'code', 'child'));
    expectInitialized(project.rootPath, project);
  });

  it.each([
    ['a relative path', 'relative/dir'],
    ['a "./" path', './dot-relative'],
    ['"~user/" (only ~ and ~/ expand)', '~someone/dir'],
  ])('rejects %s with BAD_USER_INPUT and creates nothing', async (_label, rootPath) => {
    const error = await h.expectRejectedUnchanged(() => create({ name: 'relative', rootPath }), 'BAD_USER_INPUT');
    expect(error.message).toContain('rootPath');
    expect(existsSync(resolve(process.cwd(), rootPath))).toBe(false);
  });
});

describe('createProject: targets', () => {
  it('creates a missing target and its parents, then git init and one empty "Initialize project" commit', async () => {
    const parent = scratch('missing');
    const root = join(parent, 'a', 'b', 'c');
    const project = await createOk({ name: 'missing-target', rootPath: root });
    expect(project.rootPath).toBe(root);
    expectInitialized(root, project);
  });

  it('initializes an empty existing folder in place, keeping the folder', async () => {
    const root = scratch('empty');
    const inode = statSync(root).ino;
    const project = await createOk({ name: 'empty-target', rootPath: root });
    expect(statSync(root).ino).toBe(inode);
    expectInitialized(root, project);
  });

  it('registers an existing repository untouched (HEAD, refs and files unchanged)', async () => {
    const root = scratch('repo');
    const env = h.settings.gitEnv;
    git(root, env, 'init', '--quiet');
    writeFileSync(join(root, 'README.md'), 'hello\n');
    git(root, env, 'add', 'README.md');
    git(root, env, 'commit', '--quiet', '-m', 'first');
    writeFileSync(join(root, 'dirty.txt'), 'uncommitted\n');
    const head = git(root, env, 'rev-parse', 'HEAD');
    const before = await snapshotTree(root);

    const project = await createOk({ name: 'existing-repo', rootPath: root });
    expect(project).toMatchObject({ rootPath: root, isGitRepo: true, headCommit: head });
    expect(await snapshotTree(root)).toEqual(before);
    expect(git(root, env, 'rev-list', '--count', 'HEAD')).toBe('1');
  });

  it('registers an existing unborn repository untouched, with a null headCommit', async () => {
    const root = scratch('unborn');
    git(root, h.settings.gitEnv, 'init', '--quiet');
    const before = await snapshotTree(root);

    const project = await createOk({ name: 'unborn-repo', rootPath: root });
    expect(project).toMatchObject({ rootPath: root, isGitRepo: true, headCommit: null });
    expect(await snapshotTree(root)).toEqual(before);
  });

  it('registers a populated non-git folder untouched, as not a git repository', async () => {
    const root = scratch('plain');
    mkdirSync(join(root, 'src'));
    writeFileSync(join(root, 'src', 'main.c'), 'int main(void) { return 0; }\n');
    const before = await snapshotTree(root);

    const project = await createOk({ name: 'plain-folder', rootPath: root });
    expect(project).toMatchObject({ rootPath: root, isGitRepo: false, headCommit: null });
    expect(await snapshotTree(root)).toEqual(before);
  });

  it('rejects a rootPath that is a file with BAD_USER_INPUT and leaves it alone', async () => {
    const file = join(scratch('file'), 'not-a-dir');
    writeFileSync(file, 'content\n');
    const error = await h.expectRejectedUnchanged(() => create({ name: 'file-target', rootPath: file }), 'BAD_USER_INPUT');
    expect(error.message).toContain(file);
  });
});

describe('createProject: roots and the Keelson home', () => {
  it.each([
    ['the Keelson home', () => h.settings.keelsonHome, 'is the Keelson home (KEELSON_HOME)'],
    ['the Keelson home with a trailing slash', () => `${h.settings.keelsonHome}/`, 'is the Keelson home (KEELSON_HOME)'],
    ['the Keelson home spelled with ".."', () => `${h.settings.keelsonHome}/sub/..`, 'is the Keelson home (KEELSON_HOME)'],
    ['a folder inside it that does not exist yet', () => join(h.settings.keelsonHome, 'harness', 'codex'), 'is inside the Keelson home'],
    ['a folder above it', () => h.tmp, 'contains the Keelson home'],
    ['the filesystem root', () => '/', 'is the filesystem root'],
    ['a symlink to the home', () => {
      const alias = join(scratch('home-alias'), 'link');
      symlinkSync(h.settings.keelsonHome, alias);
      return alias;
    }, 'is the Keelson home (KEELSON_HOME)'],
    ['a path through a symlink into the home', () => {
      const alias = join(scratch('home-alias-deep'), 'link');
      symlinkSync(h.settings.keelsonHome, alias);
      return join(alias, 'worktrees', 'p');
    }, 'is inside the Keelson home'],
  ])('refuses %s with BAD_USER_INPUT and writes nothing', async (_label, rootPath, reason) => {
    const root = rootPath();
    const error = await h.expectRejectedUnchanged(() => create({ name: 'home-root', rootPath: root }), 'BAD_USER_INPUT');
    expect(error.message).toMatch(/^input\.rootPath: /);
    expect(error.message).toContain(reason);
  });

  it('refuses a default root inside the Keelson home (KEELSON_WORKSPACE beneath it) and writes nothing', async () => {
    const variant = await h.startVariant({ workspaceRoot: join(h.settings.keelsonHome, 'projects') });
    try {
      const error = await h.expectRejectedUnchanged(() => create({ name: 'inside' }, variant.gql), 'BAD_USER_INPUT');
      expect(error.message).toMatch(/^KEELSON_WORKSPACE: .* is inside the Keelson home/);
      expect(existsSync(join(h.settings.keelsonHome, 'projects'))).toBe(false);
    } finally {
      await variant.stop();
    }
  });
});

describe('createProject: conflicts', () => {
  let registered: ProjectView;
  beforeAll(async () => {
    registered = await createOk({ name: 'registered', rootPath: join(scratch('registered'), 'root') });
  });

  it('rejects a duplicate name with CONFLICT and creates nothing', async () => {
    const elsewhere = join(scratch('dup-name'), 'other-root');
    const error = await h.expectRejectedUnchanged(() => create({ name: 'registered', rootPath: elsewhere }), 'CONFLICT');
    expect(error.extensions?.status).toBe(409);
    expect(error.message).toContain('registered');
    expect(existsSync(elsewhere)).toBe(false);
  });

  it('rejects a duplicate root (spelled with a trailing slash) with CONFLICT', async () => {
    const error = await h.expectRejectedUnchanged(() => create({ name: 'same-root', rootPath: `${registered.rootPath}/` }), 'CONFLICT');
    expect(error.message).toContain(registered.rootPath);
  });

  it('rejects a symlink alias of a registered root with CONFLICT', async () => {
    const alias = join(scratch('alias'), 'link');
    symlinkSync(registered.rootPath, alias);
    await h.expectRejectedUnchanged(() => create({ name: 'aliased', rootPath: alias }), 'CONFLICT');
  });

  it('lets one of two concurrent creates of one root under different names register it; the other is CONFLICT and leaves its repository whole', async () => {
    for (const [i, made] of [['missing', false], ['empty', true]] as const) {
      const root = join(scratch(`race-${i}`), 'root');
      if (made) mkdirSync(root);
      const answers = await Promise.all([create({ name: `race-${i}-a`, rootPath: root }), create({ name: `race-${i}-b`, rootPath: root })]);
      const won = answers.filter((a) => !a.errors);
      const lost = answers.filter((a) => a.errors);
      expect(won).toHaveLength(1);
      expect(lost.map((a) => a.errors![0]!.extensions?.code)).toEqual(['CONFLICT']);
      // The loser never touched the folder: one commit, the winner's .git in place.
      expectInitialized(root, won[0]!.data!.createProject);
    }
  });

  it("allows a project nested beneath another project's root", async () => {
    const nested = join(registered.rootPath, 'packages', 'inner');
    const project = await createOk({ name: 'nested', rootPath: nested });
    expect(project.rootPath).toBe(nested);
    expectInitialized(nested, project);
  });
});

describe('createProject: identity from a conditional include', () => {
  it('commits with an identity the global config includes only for repositories beneath the target (includeIf gitdir)', async () => {
    const dir = scratch('include-if');
    const projects = join(dir, 'projects');
    writeFileSync(join(dir, 'identity'), `[user]\n\tname = Included Identity\n\temail = included@example.invalid\n`);
    writeFileSync(join(dir, 'gitconfig'), `[includeIf "gitdir:${projects}/"]\n\tpath = ${join(dir, 'identity')}\n`);
    const emptyHome = join(dir, 'home');
    mkdirSync(emptyHome);
    const env = { ...envWithoutGit(), HOME: emptyHome, GIT_CONFIG_GLOBAL: join(dir, 'gitconfig'), GIT_CONFIG_NOSYSTEM: '1' };
    const variant = await h.startVariant({ gitEnv: env });
    try {
      const root = join(projects, 'work');
      const project = expectData(await create({ name: 'included-identity', rootPath: root }, variant.gql)).createProject;
      expect(git(root, env, 'log', '--format=%an%n%ae%n%s')).toBe('Included Identity\nincluded@example.invalid\nInitialize project');
      expect(project.headCommit).toBe(git(root, env, 'rev-parse', 'HEAD'));
    } finally {
      await variant.stop();
    }
  });
});

describe('createProject: missing git identity', () => {
  let noIdentity: Awaited<ReturnType<ProjectsHarness['startVariant']>>;
  beforeAll(async () => {
    // An empty global config, HOME pointing at an empty folder: git knows no user.name or user.email.
    const dir = scratch('no-identity');
    const emptyHome = join(dir, 'home');
    mkdirSync(emptyHome);
    writeFileSync(join(dir, 'gitconfig'), '');
    noIdentity = await h.startVariant({
      gitEnv: { ...envWithoutGit(), HOME: emptyHome, GIT_CONFIG_GLOBAL: join(dir, 'gitconfig'), GIT_CONFIG_NOSYSTEM: '1' },
    });
  });
  afterAll(() => noIdentity?.stop());

  it('fails a missing target with INTERNAL naming user.name and user.email, and creates nothing', async () => {
    const parent = scratch('no-identity-missing');
    const root = join(parent, 'deep', 'root');
    const error = await h.expectRejectedUnchanged(() => create({ name: 'no-identity', rootPath: root }, noIdentity.gql), 'INTERNAL');
    expect(error.extensions?.status).toBe(500);
    expect(error.message).toContain('user.name');
    expect(error.message).toContain('user.email');
    expect(readdirSync(parent)).toEqual([]);
  });

  it('fails an empty folder with INTERNAL and leaves it empty, without .git', async () => {
    const root = scratch('no-identity-empty');
    const error = await h.expectRejectedUnchanged(() => create({ name: 'no-identity', rootPath: root }, noIdentity.gql), 'INTERNAL');
    expect(error.message).toMatch(/user\.name.*user\.email/);
    expect(readdirSync(root)).toEqual([]);
  });

  it("does not borrow an enclosing repository's local identity for a nested target", async () => {
    const outer = scratch('outer-with-local-identity');
    git(outer, h.settings.gitEnv, 'init', '--quiet');
    git(outer, h.settings.gitEnv, 'config', 'user.name', 'Outer Local');
    git(outer, h.settings.gitEnv, 'config', 'user.email', 'outer@example.invalid');
    const inner = join(outer, 'inner');
    const error = await h.expectRejectedUnchanged(() => create({ name: 'borrowed', rootPath: inner }, noIdentity.gql), 'INTERNAL');
    expect(error.message).toMatch(/user\.name.*user\.email/);
    expect(existsSync(inner)).toBe(false);
  });

  it('still registers an existing repository, which needs no commit', async () => {
    const root = scratch('no-identity-repo');
    git(root, h.settings.gitEnv, 'init', '--quiet');
    const project = expectData(await create({ name: 'no-identity-repo', rootPath: root }, noIdentity.gql)).createProject;
    expect(project).toMatchObject({ rootPath: root, isGitRepo: true, headCommit: null });
  });
});

describe('createProject: idempotency key (claimed in the transaction that inserts the row)', () => {
  const KEYED = `mutation ($input: CreateProjectInput!, $k: String) { createProject(input: $input, idempotencyKey: $k) { ${PROJECT_FIELDS} } }`;

  it('a repeat with the same key and input is the same project (one PROJECT_CREATED); another input is CONFLICT and makes nothing', async () => {
    const root = join(scratch('keyed'), 'root');
    const seq = await h.lastSeq();
    const first = expectData(await h.gql<{ createProject: ProjectView }>(KEYED, { input: { name: 'keyed', rootPath: root }, k: 'create-keyed-1' })).createProject;
    const again = expectData(await h.gql<{ createProject: ProjectView }>(KEYED, { input: { rootPath: root, name: 'keyed' }, k: 'create-keyed-1' })).createProject;
    expect(again).toEqual(first);
    expect(await h.eventsSince(seq)).toEqual([{ type: 'PROJECT_CREATED', payload: { projectId: first.id } }]);
    const elsewhere = join(scratch('keyed-other'), 'root');
    const other = await h.gql(KEYED, { input: { name: 'keyed-other', rootPath: elsewhere }, k: 'create-keyed-1' });
    expect(other.errors?.[0]?.extensions?.code).toBe('CONFLICT');
    expect(existsSync(elsewhere)).toBe(false);
  });

  it('a create that fails frees its key: the repeat runs it', async () => {
    const taken = join(scratch('keyed-file'), 'file');
    writeFileSync(taken, 'not a folder');
    const failed = await h.gql(KEYED, { input: { name: 'keyed-retry', rootPath: taken }, k: 'create-keyed-2' });
    expect(failed.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const res = await h.gql(KEYED, { input: { name: 'keyed-retry', rootPath: taken }, k: 'create-keyed-2' });
    expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(res.errors?.[0]?.message).toContain('is not a directory');
  });
});
