import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, gitSucceeds } from '../../test/support/gitFixtures';
import { expectData, expectError, startProjectsHarness, type ProjectsHarness } from '../../test/support/projectsHarness';

// The integration project's `testTimeout` is not applied (jest-circus reads only the global one).
jest.setTimeout(60_000);

interface LeaseView {
  id: string;
  path: string;
  branch: string;
  purpose: string | null;
  acquiredAt: string;
  base: 'ORIGIN_DEFAULT' | 'HEAD';
  baseRef: string | null;
  baseCommit: string | null;
  prepare: {
    command: string[] | null;
    detectedFrom: string | null;
    status: 'SKIPPED' | 'SUCCEEDED' | 'FAILED';
    exitCode: number | null;
    durationMs: number | null;
    log: string | null;
  } | null;
  project: { id: string };
}

const LEASE_FIELDS = 'id path branch purpose acquiredAt base baseRef baseCommit prepare { command detectedFrom status exitCode durationMs log } project { id }';
const ACQUIRE = `mutation ($projectId: ID!, $purpose: String, $base: WorkspaceBase) { acquireWorkspace(projectId: $projectId, purpose: $purpose, base: $base) { ${LEASE_FIELDS} } }`;
const RELEASE = 'mutation ($id: ID!) { releaseWorkspace(id: $id) }';
const WORKSPACES = `query ($id: ID!) { project(id: $id) { workspaces { ${LEASE_FIELDS} } } }`;

let h: ProjectsHarness;
let project: { id: string; rootPath: string };

beforeAll(async () => {
  h = await startProjectsHarness();
  project = await createProject('app');
});
afterAll(() => h?.close());

async function createProject(name: string, rootPath?: string): Promise<{ id: string; rootPath: string }> {
  const res = await h.gql<{ createProject: { id: string; rootPath: string } }>(
    'mutation ($input: CreateProjectInput!) { createProject(input: $input) { id rootPath } }',
    { input: { name, rootPath } },
  );
  return expectData(res).createProject;
}

/** Acquires a lease that must succeed, asserting it appended exactly one WORKSPACE_ACQUIRED event for it. */
async function acquire(projectId: string, purpose?: string, base?: 'ORIGIN_DEFAULT' | 'HEAD'): Promise<LeaseView> {
  const seq = await h.lastSeq();
  const lease = expectData(await h.gql<{ acquireWorkspace: LeaseView }>(ACQUIRE, { projectId, purpose, base })).acquireWorkspace;
  expect(await h.eventsSince(seq)).toEqual([{ type: 'WORKSPACE_ACQUIRED', payload: { projectId, leaseId: lease.id } }]);
  return lease;
}

async function workspacesOf(projectId: string): Promise<LeaseView[]> {
  return expectData(await h.gql<{ project: { workspaces: LeaseView[] } }>(WORKSPACES, { id: projectId })).project.workspaces;
}

/** The worktrees git knows for a repository, as { path, branch }. */
function worktrees(root: string): { path: string; branch?: string }[] {
  return git(root, h.settings.gitEnv, 'worktree', 'list', '--porcelain')
    .split('\n\n')
    .map((block) => {
      const lines = block.split('\n');
      const path = lines.find((l) => l.startsWith('worktree '))!.slice('worktree '.length);
      const branch = lines.find((l) => l.startsWith('branch '))?.slice('branch refs/heads/'.length);
      return { path, branch };
    });
}

describe('acquireWorkspace', () => {
  it('creates a git worktree on its own branch under <keelsonHome>/worktrees, listed on Project.workspaces', async () => {
    const env = h.settings.gitEnv;
    const projectHead = git(project.rootPath, env, 'rev-parse', 'HEAD');
    const projectBranch = git(project.rootPath, env, 'symbolic-ref', '--short', 'HEAD');

    const lease = await acquire(project.id, 'review');
    expect(lease).toMatchObject({ purpose: 'review', project: { id: project.id } });
    // No origin: the local HEAD; no lockfile: nothing to prepare.
    expect(lease).toMatchObject({ base: 'HEAD', baseRef: 'HEAD', baseCommit: projectHead });
    expect(lease.prepare).toEqual({ command: null, detectedFrom: null, status: 'SKIPPED', exitCode: null, durationMs: null, log: null });
    expect(lease.path.startsWith(join(h.settings.keelsonHome, 'worktrees') + '/')).toBe(true);
    expect(existsSync(lease.path)).toBe(true);
    expect(worktrees(project.rootPath)).toContainEqual({ path: lease.path, branch: lease.branch });
    expect(git(lease.path, env, 'symbolic-ref', '--short', 'HEAD')).toBe(lease.branch);
    expect(git(lease.path, env, 'rev-parse', 'HEAD')).toBe(projectHead);
    // The live checkout stays where it was.
    expect(git(project.rootPath, env, 'symbolic-ref', '--short', 'HEAD')).toBe(projectBranch);

    expect(await workspacesOf(project.id)).toContainEqual(lease);
  });

  it('gives every lease its own branch and worktree', async () => {
    const a = await acquire(project.id);
    const b = await acquire(project.id);
    expect(a.branch).not.toBe(b.branch);
    expect(a.path).not.toBe(b.path);
    expect(a.purpose).toBeNull();
    const listed = await workspacesOf(project.id);
    expect(listed).toEqual(expect.arrayContaining([a, b]));
  });

  it('keeps a lease across a restart of the subgraph', async () => {
    const lease = await acquire(project.id, 'survives');
    await h.restart();
    expect(await workspacesOf(project.id)).toContainEqual(lease);
    expect(existsSync(lease.path)).toBe(true);
  });

  it('rejects an unborn repository with BAD_USER_INPUT and creates nothing', async () => {
    const root = mkdtempSync(join(h.tmp, 'unborn-'));
    git(root, h.settings.gitEnv, 'init', '--quiet');
    const unborn = await createProject('unborn', root);
    const error = await h.expectRejectedUnchanged(() => h.gql(ACQUIRE, { projectId: unborn.id }), 'BAD_USER_INPUT');
    expect(error.message).toContain('unborn');
    expect(git(root, h.settings.gitEnv, 'branch', '--list')).toBe('');
    expect(existsSync(join(h.settings.keelsonHome, 'worktrees', 'unborn'))).toBe(false);
  });

  it('rejects a folder that is not a git repository with BAD_USER_INPUT and creates nothing', async () => {
    const root = mkdtempSync(join(h.tmp, 'plain-'));
    mkdirSync(join(root, 'docs'));
    writeFileSync(join(root, 'docs', 'notes.md'), 'notes\n');
    const plain = await createProject('plain', root);
    await h.expectRejectedUnchanged(() => h.gql(ACQUIRE, { projectId: plain.id }), 'BAD_USER_INPUT');
    expect(existsSync(join(h.settings.keelsonHome, 'worktrees', 'plain'))).toBe(false);
  });

  it('refuses a lease whose worktree folder would resolve outside <keelsonHome>/worktrees (a planted symlink), creating nothing', async () => {
    const linked = await createProject('linked');
    const elsewhere = mkdtempSync(join(h.tmp, 'elsewhere-'));
    mkdirSync(join(h.settings.keelsonHome, 'worktrees'), { recursive: true });
    symlinkSync(elsewhere, join(h.settings.keelsonHome, 'worktrees', 'linked'));
    const error = await h.expectRejectedUnchanged(() => h.gql(ACQUIRE, { projectId: linked.id }), 'INTERNAL');
    expect(error.message).toMatch(/resolves outside .*worktrees/);
    expect(readdirSync(elsewhere)).toEqual([]);
    expect(git(linked.rootPath, h.settings.gitEnv, 'worktree', 'list', '--porcelain').match(/^worktree /gm)).toHaveLength(1);
  });

  it('rejects an unknown project with NOT_FOUND', async () => {
    const error = await h.expectRejectedUnchanged(() => h.gql(ACQUIRE, { projectId: randomUUID() }), 'NOT_FOUND');
    expect(error.extensions?.status).toBe(404);
  });
});

describe('acquireWorkspace bases', () => {
  let originTip: string;
  let localHead: string;
  let origin: string;
  let cloned: { id: string; rootPath: string };

  // A bare origin, a clone of it registered as a project, then origin moves on: a commit the clone has not fetched.
  beforeAll(async () => {
    const env = h.settings.gitEnv;
    const upstream = mkdtempSync(join(h.tmp, 'upstream-'));
    git(upstream, env, 'init', '--quiet', '-b', 'main');
    git(upstream, env, 'commit', '--quiet', '--allow-empty', '-m', 'first');
    origin = join(h.tmp, 'origin.git');
    git(h.tmp, env, 'clone', '--quiet', '--bare', upstream, origin);
    const root = join(h.tmp, 'cloned');
    git(h.tmp, env, 'clone', '--quiet', origin, root);
    localHead = git(root, env, 'rev-parse', 'HEAD');
    git(upstream, env, 'commit', '--quiet', '--allow-empty', '-m', 'second');
    git(upstream, env, 'push', '--quiet', origin, 'main');
    originTip = git(upstream, env, 'rev-parse', 'HEAD');
    expect(originTip).not.toBe(localHead);
    cloned = await createProject('cloned', root);
  });

  it("branches from the tip of origin's default branch after fetching it, by default when the project has an origin", async () => {
    const env = h.settings.gitEnv;
    const lease = await acquire(cloned.id, 'fresh');
    expect(lease).toMatchObject({ base: 'ORIGIN_DEFAULT', baseRef: 'origin/main', baseCommit: originTip });
    expect(git(lease.path, env, 'rev-parse', 'HEAD')).toBe(originTip);
    expect(git(lease.path, env, 'symbolic-ref', '--short', 'HEAD')).toBe(lease.branch);
    // The live checkout is not moved; only its remote-tracking ref learned the fetched tip.
    expect(git(cloned.rootPath, env, 'rev-parse', 'HEAD')).toBe(localHead);
    expect(git(cloned.rootPath, env, 'rev-parse', 'refs/remotes/origin/main')).toBe(originTip);
    expect(await workspacesOf(cloned.id)).toContainEqual(lease);
  });

  it('branches from the local HEAD when asked for base HEAD, fetching nothing', async () => {
    const env = h.settings.gitEnv;
    const lease = await acquire(cloned.id, undefined, 'HEAD');
    expect(lease).toMatchObject({ base: 'HEAD', baseRef: 'HEAD', baseCommit: localHead });
    expect(git(lease.path, env, 'rev-parse', 'HEAD')).toBe(localHead);
  });

  it('takes the branch origin announces when origin/HEAD is not set locally', async () => {
    const env = h.settings.gitEnv;
    const root = mkdtempSync(join(h.tmp, 'added-remote-'));
    git(root, env, 'init', '--quiet', '-b', 'work');
    git(root, env, 'commit', '--quiet', '--allow-empty', '-m', 'local');
    git(root, env, 'remote', 'add', 'origin', origin);
    const added = await createProject('added-remote', root);
    const lease = await acquire(added.id);
    expect(lease).toMatchObject({ base: 'ORIGIN_DEFAULT', baseRef: 'origin/main', baseCommit: originTip });
    expect(git(lease.path, env, 'rev-parse', 'HEAD')).toBe(originTip);
  });

  it('rejects base ORIGIN_DEFAULT for a project without an origin with BAD_USER_INPUT and creates nothing', async () => {
    const error = await h.expectRejectedUnchanged(() => h.gql(ACQUIRE, { projectId: project.id, base: 'ORIGIN_DEFAULT' }), 'BAD_USER_INPUT');
    expect(error.message).toMatch(/no(ne)? .*origin|origin remote/);
    expect(error.message).toContain('base: HEAD');
  });

  it('fails with UPSTREAM_FAILED when origin cannot be fetched, and creates nothing', async () => {
    const env = h.settings.gitEnv;
    const root = mkdtempSync(join(h.tmp, 'gone-origin-'));
    git(root, env, 'init', '--quiet', '-b', 'main');
    git(root, env, 'commit', '--quiet', '--allow-empty', '-m', 'local');
    git(root, env, 'remote', 'add', 'origin', join(h.tmp, 'no-such-origin.git'));
    const gone = await createProject('gone-origin', root);
    const error = await h.expectRejectedUnchanged(() => h.gql(ACQUIRE, { projectId: gone.id }), 'UPSTREAM_FAILED');
    expect(error.message).toContain('git fetch origin');
    expect(error.message).toContain('base: HEAD');
    // base HEAD still works there.
    expect((await acquire(gone.id, undefined, 'HEAD')).base).toBe('HEAD');
  });
});

describe('acquireWorkspace preparation', () => {
  /** A repository whose commit holds the given files, registered as a project. */
  async function projectWithFiles(name: string, files: Record<string, string>): Promise<{ id: string; rootPath: string }> {
    const env = h.settings.gitEnv;
    const root = mkdtempSync(join(h.tmp, `${name}-`));
    git(root, env, 'init', '--quiet', '-b', 'main');
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(join(root, path, '..'), { recursive: true });
      writeFileSync(join(root, path), text);
    }
    git(root, env, 'add', '-A');
    git(root, env, 'commit', '--quiet', '-m', 'files');
    return createProject(name, root);
  }

  const lockfile = (deps: Record<string, string>) =>
    JSON.stringify({
      name: 'prep',
      version: '1.0.0',
      lockfileVersion: 3,
      requires: true,
      packages: {
        '': { name: 'prep', version: '1.0.0', hasInstallScript: true, dependencies: deps },
        'local-dep': { version: '1.0.0' },
        'node_modules/local-dep': { resolved: 'local-dep', link: true },
      },
    });

  it('runs npm ci for a package-lock.json in the sandbox (install scripts write only the worktree) and records it on the lease', async () => {
    const outside = join(h.tmp, 'escaped.txt');
    const prep = await projectWithFiles('npm-prep', {
      'package.json': JSON.stringify({
        name: 'prep',
        version: '1.0.0',
        private: true,
        dependencies: { 'local-dep': 'file:local-dep' },
        scripts: { postinstall: `echo installed > prepared.txt && (echo out > ${outside} 2>/dev/null || echo confined)` },
      }),
      'package-lock.json': lockfile({ 'local-dep': 'file:local-dep' }),
      'local-dep/package.json': JSON.stringify({ name: 'local-dep', version: '1.0.0' }),
    });
    const lease = await acquire(prep.id, 'deps');
    expect(lease.prepare).toMatchObject({
      command: ['npm', 'ci', '--no-audit', '--no-fund'],
      detectedFrom: 'package-lock.json',
      status: 'SUCCEEDED',
      exitCode: 0,
    });
    expect(lease.prepare!.durationMs).toBeGreaterThanOrEqual(0);
    expect(lease.prepare!.log).toContain('confined');
    expect(existsSync(join(lease.path, 'node_modules', 'local-dep', 'package.json'))).toBe(true);
    expect(existsSync(join(lease.path, 'prepared.txt'))).toBe(true);
    expect(existsSync(outside)).toBe(false);
    expect(existsSync(join(prep.rootPath, 'node_modules'))).toBe(false);
    // Durable with the lease.
    await h.restart();
    expect(await workspacesOf(prep.id)).toContainEqual(lease);
  });

  it('fails a failing preparation with UPSTREAM_FAILED, its outcome and log in extensions.prepare, leaving no worktree, branch or lease', async () => {
    const env = h.settings.gitEnv;
    // package.json asks for a dependency the lockfile does not pin: `npm ci` refuses (offline, at once).
    const broken = await projectWithFiles('npm-broken', {
      'package.json': JSON.stringify({ name: 'prep', version: '1.0.0', private: true, dependencies: { 'local-dep': 'file:local-dep', 'left-pad': '1.3.0' } }),
      'package-lock.json': lockfile({ 'local-dep': 'file:local-dep' }),
      'local-dep/package.json': JSON.stringify({ name: 'local-dep', version: '1.0.0' }),
    });
    const seq = await h.lastSeq();
    const res = await h.gql(ACQUIRE, { projectId: broken.id, purpose: 'doomed' });
    const error = expectError(res, 'UPSTREAM_FAILED');
    expect(error.message).toContain('`npm ci --no-audit --no-fund` (from package-lock.json) exited with code');
    expect(error.message).toContain('removed');
    const prepare = error.extensions?.prepare as LeaseView['prepare'];
    expect(prepare).toMatchObject({ command: ['npm', 'ci', '--no-audit', '--no-fund'], status: 'FAILED' });
    expect(prepare!.exitCode).not.toBe(0);
    expect(prepare!.log).toMatch(/in sync|left-pad/);
    // Nothing behind: no lease, no event, no worktree (folder or registration), no branch.
    expect(await workspacesOf(broken.id)).toEqual([]);
    expect(await h.eventsSince(seq)).toEqual([]);
    expect(worktrees(broken.rootPath)).toHaveLength(1);
    expect(git(broken.rootPath, env, 'branch', '--list', 'keelson/*')).toBe('');
    expect(readdirSync(join(h.settings.keelsonHome, 'worktrees', 'npm-broken'))).toEqual([]);
  });
});

describe('releaseWorkspace', () => {
  it('removes the worktree folder, drops the lease from workspaces and keeps the branch', async () => {
    const lease = await acquire(project.id, 'short-lived');
    const env = h.settings.gitEnv;
    const seq = await h.lastSeq();

    expect(expectData(await h.gql<{ releaseWorkspace: boolean }>(RELEASE, { id: lease.id })).releaseWorkspace).toBe(true);
    expect(await h.eventsSince(seq)).toEqual([{ type: 'WORKSPACE_RELEASED', payload: { projectId: project.id, leaseId: lease.id } }]);
    expect(existsSync(lease.path)).toBe(false);
    expect((await workspacesOf(project.id)).map((l) => l.id)).not.toContain(lease.id);
    expect(worktrees(project.rootPath).map((w) => w.path)).not.toContain(lease.path);
    expect(gitSucceeds(project.rootPath, env, 'rev-parse', '--verify', '--quiet', `refs/heads/${lease.branch}`)).toBe(true);
  });

  it('answers false when the lease was already released, changing nothing', async () => {
    const lease = await acquire(project.id);
    expectData(await h.gql(RELEASE, { id: lease.id }));
    const before = await h.observe();
    expect(expectData(await h.gql<{ releaseWorkspace: boolean }>(RELEASE, { id: lease.id })).releaseWorkspace).toBe(false);
    expect(await h.observe()).toEqual(before);
  });

  it.each([
    ['an unknown lease id', () => randomUUID()],
    ['an id that is not a uuid', () => 'not-a-lease'],
  ])('rejects %s with NOT_FOUND', async (_label, id) => {
    const error = await h.expectRejectedUnchanged(() => h.gql(RELEASE, { id: id() }), 'NOT_FOUND');
    expect(error.extensions?.status).toBe(404);
  });
});
