import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, gitSucceeds } from '../../test/support/gitFixtures';
import { expectData, startProjectsHarness, type ProjectsHarness } from '../../test/support/projectsHarness';

// The integration project's `testTimeout` is not applied (jest-circus reads only the global one).
jest.setTimeout(60_000);

interface LeaseView {
  id: string;
  path: string;
  branch: string;
  purpose: string | null;
  acquiredAt: string;
  project: { id: string };
}

const LEASE_FIELDS = 'id path branch purpose acquiredAt project { id }';
const ACQUIRE = `mutation ($projectId: ID!, $purpose: String) { acquireWorkspace(projectId: $projectId, purpose: $purpose) { ${LEASE_FIELDS} } }`;
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
async function acquire(projectId: string, purpose?: string): Promise<LeaseView> {
  const seq = await h.lastSeq();
  const lease = expectData(await h.gql<{ acquireWorkspace: LeaseView }>(ACQUIRE, { projectId, purpose })).acquireWorkspace;
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
