import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { serveDumbHttps, selfSignedCert, type DumbHttpsRemote } from '@keelson/subgraph-projects/test/support/dumbHttpsRemote';
import { gql, gqlData } from './support/client';
import { startTestMesh, type TestMesh } from './support/mesh';
import { until } from './support/until';

// The attacks measured on main, each refused through the gateway with nothing changed: a project's
// git config running code in the mesh's own git calls, clone URLs reaching loopback or smuggling ssh
// options, and project roots over the mesh's own state. This mesh allows no private clone host.

interface Board {
  projects: { name: string; state: string; branch: string | null; head: string | null }[];
}

let mesh: TestMesh;
let pg: Client;
let markers: string;

/** git as a user's shell runs it, with the mesh's identity: fixtures and the controls. */
function plainGit(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: mesh.rawEnv, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** What a refused call must leave as it was: the registry, the projects event stream, the workspace. */
async function observe() {
  const { projects } = await gqlData<{ projects: { id: string; name: string; rootPath: string; trusted: boolean }[] }>(mesh.gatewayUrl, '{ projects { id name rootPath trusted } }');
  const { rows } = await pg.query<{ n: number; last: string | null }>(`SELECT count(*)::int AS n, max(seq)::text AS last FROM events WHERE stream = 'projects'`);
  return { projects, events: rows[0], workspace: existsSync(mesh.workspaceRoot) ? readdirSync(mesh.workspaceRoot).sort() : null, markers: readdirSync(markers).sort() };
}

/** Runs a mutation that must fail with `code` (and `status`), asserting nothing observable changed. */
async function refusedUnchanged(query: string, variables: Record<string, unknown>, code: string, status: number): Promise<string> {
  const before = await observe();
  const res = await gql(mesh.gatewayUrl, query, variables);
  expect(res.errors?.map((e) => e.extensions)).toEqual([expect.objectContaining({ code, status })]);
  expect(res.data ?? null).toBeNull();
  expect(await observe()).toEqual(before);
  return res.errors![0]!.message;
}

beforeAll(async () => {
  mesh = await startTestMesh();
  pg = new Client({ connectionString: mesh.db.url });
  await pg.connect();
  markers = join(mesh.dir, 'markers');
  mkdirSync(markers);
});
afterAll(async () => {
  await pg?.end();
  await mesh?.teardown();
});

describe("a project's git config runs nothing in the mesh's own git calls", () => {
  let repo: string;
  let project: { id: string; name: string };
  const marker = (name: string) => join(markers, name);

  beforeAll(async () => {
    // An existing repository, as a user would register one they cloned from anywhere.
    repo = join(mesh.dir, 'fixtures', 'hostile');
    mkdirSync(repo, { recursive: true });
    plainGit(repo, 'init', '--quiet', '--template=');
    writeFileSync(join(repo, 'a.txt'), 'content\n');
    writeFileSync(join(repo, '.gitattributes'), '*.txt filter=evil\n');
    plainGit(repo, 'add', '.');
    plainGit(repo, 'commit', '--quiet', '-m', 'hostile');
    plainGit(repo, 'config', 'core.fsmonitor', `touch '${marker('fsmonitor')}'; false`);
    plainGit(repo, 'config', 'filter.evil.smudge', `touch '${marker('smudge')}'; cat`);
    plainGit(repo, 'config', 'filter.evil.clean', `touch '${marker('clean')}'; cat`);
    mkdirSync(join(repo, '.git', 'hooks'));
    writeFileSync(join(repo, '.git', 'hooks', 'post-checkout'), `#!/bin/sh\ntouch '${marker('post-checkout')}'\n`);
    chmodSync(join(repo, '.git', 'hooks', 'post-checkout'), 0o755);
    // Racy: git must re-read a.txt (through the clean filter) to know whether it changed.
    utimesSync(join(repo, 'a.txt'), 1_000_000_000, 1_000_000_000);
    ({ createProject: project } = await gqlData<{ createProject: { id: string; name: string } }>(
      mesh.gatewayUrl,
      'mutation ($r: String!) { createProject(input: { name: "hostile", rootPath: $r }) { id name } }',
      { r: repo },
    ));
  });

  it('reads the project on the projects board (git status, worktree list, log) without running its fsmonitor or filters', async () => {
    const board = await until(
      'the projects board with the hostile project',
      async () => {
        await gqlData(mesh.gatewayUrl, 'mutation { ribAction(ribId: "projects", type: "refresh") { ok } }');
        return (await gqlData<{ snapshot: { payload: Board } | null }>(mesh.gatewayUrl, '{ snapshot(key: "rib:projects") { payload } }')).snapshot?.payload;
      },
      (b) => b?.projects.some((p) => p.name === 'hostile' && p.state === 'ok') ?? false,
    );
    expect(board!.projects.find((p) => p.name === 'hostile')).toMatchObject({ state: 'ok', branch: 'main', head: plainGit(repo, 'rev-parse', 'HEAD') });
    const { project: read } = await gqlData<{ project: { isGitRepo: boolean; headCommit: string } }>(mesh.gatewayUrl, 'query ($p: ID) { project(id: $p) { isGitRepo headCommit } }', {
      p: project.id,
    });
    expect(read).toEqual({ isGitRepo: true, headCommit: plainGit(repo, 'rev-parse', 'HEAD') });
    expect(readdirSync(markers)).toEqual([]);
  });

  it('leases a worktree (git worktree add) without running its post-checkout hook or smudge filter', async () => {
    const { acquireWorkspace: lease } = await gqlData<{ acquireWorkspace: { id: string; path: string } }>(
      mesh.gatewayUrl,
      'mutation ($p: ID!) { acquireWorkspace(projectId: $p, purpose: "e2e") { id path } }',
      { p: project.id },
    );
    expect(readFileSync(join(lease.path, 'a.txt'), 'utf8')).toBe('content\n');
    expect(readdirSync(markers)).toEqual([]);
    await gqlData(mesh.gatewayUrl, 'mutation ($l: ID!) { releaseWorkspace(id: $l) }', { l: lease.id });
  });

  it('(control) the same config runs all of it under plain git, with the same environment', () => {
    plainGit(repo, 'status', '--porcelain');
    plainGit(repo, 'worktree', 'add', '--quiet', '-b', 'control', join(mesh.dir, 'fixtures', 'control-wt'), 'HEAD');
    expect(readdirSync(markers).sort()).toEqual(['clean', 'fsmonitor', 'post-checkout', 'smudge']);
  });
});

describe('clone URLs', () => {
  const CLONE = 'mutation ($u: String!, $n: String) { cloneProject(input: { url: $u, name: $n }) { id } }';
  let remote: DumbHttpsRemote;

  beforeAll(async () => {
    const fixtures = join(mesh.dir, 'remote');
    mkdirSync(join(fixtures, 'served', 'org'), { recursive: true });
    const src = join(fixtures, 'src');
    mkdirSync(src);
    plainGit(src, 'init', '--quiet');
    writeFileSync(join(src, 'README.md'), '# served\n');
    plainGit(src, 'add', '.');
    plainGit(src, 'commit', '--quiet', '-m', 'served');
    plainGit(fixtures, 'clone', '--quiet', '--bare', src, join(fixtures, 'served', 'org', 'repo.git'));
    plainGit(join(fixtures, 'served', 'org', 'repo.git'), 'update-server-info');
    remote = await serveDumbHttps(join(fixtures, 'served'), selfSignedCert(fixtures));
  });
  afterAll(() => remote?.close());

  it('refuses an ssh URL whose host is an ssh option (ssh://-oProxyCommand=…) with BAD_USER_INPUT, before git runs', async () => {
    const ran = join(markers, 'proxy-command');
    for (const url of [`ssh://-oProxyCommand=touch%20${ran}/x.git`, `ssh://-oProxyCommand=sh/repo.git`, `ssh://-u@example.org/repo.git`, `git@example.org:-repo.git`]) {
      const message = await refusedUnchanged(CLONE, { u: url, n: 'option-like' }, 'BAD_USER_INPUT', 400);
      expect(message).toMatch(/^input\.url: .*must not (be empty or )?start with "-"/);
    }
    expect(existsSync(ran)).toBe(false);
  });

  it('refuses https URLs on loopback, link-local and private hosts — by literal and by name — with BAD_USER_INPUT, and git never reaches them', async () => {
    const port = new URL(remote.origin).port;
    for (const url of [
      `${remote.origin}/org/repo.git`,
      `https://localhost:${port}/org/repo.git`,
      `https://127.1:${port}/org/repo.git`,
      `https://[::1]:${port}/org/repo.git`,
      'https://169.254.169.254/latest/meta-data.git',
      'https://10.0.0.1/org/repo.git',
    ]) {
      const message = await refusedUnchanged(CLONE, { u: url, n: 'private-host' }, 'BAD_USER_INPUT', 400);
      expect(message).toContain('is a loopback, private or link-local address; clones reach public hosts only unless KEELSON_GIT_ALLOW_PRIVATE_HOSTS allows it');
    }
    expect(remote.requests).toEqual([]);
  });

  it('keeps credentials of a refused URL out of the error', async () => {
    const message = await refusedUnchanged(CLONE, { u: `https://user:hunter2-secret@127.0.0.1:${new URL(remote.origin).port}/org/repo.git`, n: 'with-secret' }, 'BAD_USER_INPUT', 400);
    expect(message).not.toContain('hunter2');
  });
});

describe('project roots', () => {
  const CREATE = 'mutation ($r: String!) { createProject(input: { name: "over-home", rootPath: $r }) { id } }';

  it('refuses /, KEELSON_HOME and anything inside or above it — however spelled — with BAD_USER_INPUT, writing nothing', async () => {
    const home = mesh.rawEnv.KEELSON_HOME!;
    mkdirSync(join(mesh.dir, 'links'), { recursive: true });
    symlinkSync(home, join(mesh.dir, 'links', 'home-alias'));
    const cases: [string, string][] = [
      [home, 'is the Keelson home'],
      [`${home}/`, 'is the Keelson home'],
      [`${home}/../home`, 'is the Keelson home'],
      [join(mesh.dir, 'links', 'home-alias'), 'is the Keelson home'],
      [join(home, 'harness', 'codex'), 'is inside the Keelson home'],
      [join(mesh.dir, 'links', 'home-alias', 'worktrees', 'new'), 'is inside the Keelson home'],
      [mesh.dir, 'contains the Keelson home'],
      ['/', 'is the filesystem root'],
    ];
    const homeBefore = readdirSync(home).sort();
    for (const [root, reason] of cases) {
      const message = await refusedUnchanged(CREATE, { r: root }, 'BAD_USER_INPUT', 400);
      expect(message).toMatch(/^input\.rootPath: /);
      expect(message).toContain(reason);
    }
    expect(readdirSync(home).sort()).toEqual(homeBefore);
    expect([join(home, '.git'), join(home, 'harness', 'codex'), join(home, 'worktrees', 'new'), join(mesh.dir, '.git'), '/.git'].filter(existsSync)).toEqual([]);
  });
});
