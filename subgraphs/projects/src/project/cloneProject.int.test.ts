import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { serveDumbHttps, serveSilence, selfSignedCert, type DumbHttpsRemote } from '../../test/support/dumbHttpsRemote';
import { snapshotTree } from '../../test/support/fsSnapshot';
import { git, gitAsync, testGitEnv } from '../../test/support/gitFixtures';
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
  isGitRepo: boolean;
  headCommit: string | null;
  trusted: boolean;
}

const CLONE = `mutation ($input: CloneProjectInput!) { cloneProject(input: $input) { ${PROJECT_FIELDS} } }`;

/** A post-checkout hook that leaves `marker` behind if it ever runs. */
function writeHook(hooksDir: string, marker: string) {
  mkdirSync(hooksDir, { recursive: true });
  writeFileSync(join(hooksDir, 'post-checkout'), `#!/bin/sh\ntouch '${marker}'\n`);
  chmodSync(join(hooksDir, 'post-checkout'), 0o755);
}

let h: ProjectsHarness;
let remote: DumbHttpsRemote;
/** Git environment for fixtures: the test identity, no hooks. */
let fixtureEnv: NodeJS.ProcessEnv;
let fixtureHead: string;
let markers: { hooksPath: string; template: string };
let barePath: string;

beforeAll(async () => {
  let cert = '';
  h = await startProjectsHarness({
    // The fixture remote lives on loopback: this file opts in to it explicitly (the default refuses it).
    settings: { allowPrivateHosts: ['127.0.0.1'] },
    prepare: (tmp) => {
      cert = selfSignedCert(tmp).cert;
      markers = { hooksPath: join(tmp, 'ran-hooksPath-hook'), template: join(tmp, 'ran-template-hook') };
      // A global hooksPath and template that would run a post-checkout hook on any clone that allowed hooks.
      writeHook(join(tmp, 'global-hooks'), markers.hooksPath);
      writeHook(join(tmp, 'template', 'hooks'), markers.template);
      return {
        gitConfig: ['[core]', `\thooksPath = ${join(tmp, 'global-hooks')}`, '[init]', `\ttemplateDir = ${join(tmp, 'template')}`],
        gitEnv: { GIT_SSL_CAINFO: cert },
      };
    },
  });
  fixtureEnv = testGitEnv(h.tmp, [], 'fixture-gitconfig');

  // The remote: a bare repository served with git's dumb HTTP protocol.
  const src = join(h.tmp, 'fixture-src');
  mkdirSync(join(src, 'src'), { recursive: true });
  git(src, fixtureEnv, 'init', '--quiet');
  writeFileSync(join(src, 'README.md'), '# My.Repo\n');
  writeFileSync(join(src, 'src', 'app.txt'), 'app\n');
  git(src, fixtureEnv, 'add', '.');
  git(src, fixtureEnv, 'commit', '--quiet', '-m', 'fixture');
  fixtureHead = git(src, fixtureEnv, 'rev-parse', 'HEAD');
  const served = join(h.tmp, 'served');
  barePath = join(served, 'org', 'My.Repo.git');
  mkdirSync(join(served, 'org'), { recursive: true });
  git(h.tmp, fixtureEnv, 'clone', '--quiet', '--bare', src, barePath);
  git(barePath, fixtureEnv, 'update-server-info');
  remote = await serveDumbHttps(served, { cert, key: join(h.tmp, 'key.pem') });
  // The workspace root pre-exists in this file (a variant below covers one the operation creates).
  mkdirSync(h.settings.workspaceRoot);
});
afterAll(async () => {
  await remote?.close();
  await h?.close();
});

/** Resolves or rejects with the promise, or rejects naming `what` after `ms`. */
function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not settled within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function clone(input: Record<string, unknown>, gql: Gql = h.gql) {
  return gql<{ cloneProject: ProjectView }>(CLONE, { input });
}

describe('cloneProject: URLs', () => {
  it.each([
    ['http://', () => `http://127.0.0.1:1/org/My.Repo.git`],
    ['file://', () => `file://${barePath}`],
    ['git://', () => 'git://127.0.0.1:1/org/My.Repo.git'],
    ['a local path', () => barePath],
    ['an ext:: transport', () => `ext::sh -c touch% ${join(h.tmp, 'ext-ran')}`],
  ])('rejects %s with BAD_USER_INPUT and creates nothing', async (_label, url) => {
    const error = await h.expectRejectedUnchanged(() => clone({ url: url(), name: 'rejected-url' }), 'BAD_USER_INPUT');
    expect(error.extensions?.status).toBe(400);
    expect(error.message).toContain('url');
    expect(existsSync(join(h.tmp, 'ext-ran'))).toBe(false);
  });

  it('rejects an unknown input field with BAD_USER_INPUT', async () => {
    const error = await h.expectRejectedUnchanged(
      () => clone({ url: `${remote.origin}/org/My.Repo.git`, name: 'extra-field', depth: 1 }),
      'BAD_USER_INPUT',
    );
    expect(error.message).toContain('depth');
  });

  it('rejects a URL no valid name derives from, when no name is given, with BAD_USER_INPUT', async () => {
    const error = await h.expectRejectedUnchanged(() => clone({ url: `${remote.origin}/org/___.git` }), 'BAD_USER_INPUT');
    expect(error.message).toContain('name');
  });
});

describe('cloneProject: hosts and option-like URLs', () => {
  it('refuses a loopback remote without the opt-in, by literal IP and by resolving the name, before git reaches it', async () => {
    const strict = await h.startVariant({ allowPrivateHosts: [] });
    try {
      const asked = remote.requests.length;
      const literal = await h.expectRejectedUnchanged(() => clone({ url: `${remote.origin}/org/My.Repo.git`, name: 'loopback' }, strict.gql), 'BAD_USER_INPUT');
      expect(literal.message).toBe(
        'input.url: host 127.0.0.1 is a loopback, private or link-local address; clones reach public hosts only unless KEELSON_GIT_ALLOW_PRIVATE_HOSTS allows it',
      );
      const port = new URL(remote.origin).port;
      for (const url of [`https://localhost:${port}/org/My.Repo.git`, `https://2130706433:${port}/org/My.Repo.git`, `https://[::ffff:127.0.0.1]:${port}/org/My.Repo.git`]) {
        const error = await h.expectRejectedUnchanged(() => clone({ url, name: 'loopback' }, strict.gql), 'BAD_USER_INPUT');
        expect(error.message).toContain('is a loopback, private or link-local address');
      }
      // Allowing 127.0.0.1 does not allow every name that resolves to it.
      const byName = await h.expectRejectedUnchanged(() => clone({ url: `https://localhost:${port}/org/My.Repo.git`, name: 'loopback' }), 'BAD_USER_INPUT');
      expect(byName.message).toMatch(/^input\.url: host localhost \(it resolves to (127\.0\.0\.1|::1)\)/);
      expect(remote.requests.length).toBe(asked);
    } finally {
      await strict.stop();
    }
  });

  it('refuses ssh://-oProxyCommand=… and other option-like URLs with BAD_USER_INPUT before git runs', async () => {
    const ran = join(h.tmp, 'proxy-command-ran');
    for (const url of [`ssh://-oProxyCommand=touch%20${ran}/x.git`, `ssh://-oProxyCommand=sh/x.git`, '-uhost:repo.git', `git@host:-x.git`]) {
      const error = await h.expectRejectedUnchanged(() => clone({ url, name: 'option-like' }), 'BAD_USER_INPUT');
      expect(error.message).toMatch(/^input\.url: .*must not start with "-"/);
    }
    expect(existsSync(ran)).toBe(false);
  });
});

describe('cloneProject: credentials in the URL', () => {
  let guarded: DumbHttpsRemote;
  beforeAll(async () => {
    guarded = await serveDumbHttps(join(h.tmp, 'served'), { cert: join(h.tmp, 'cert.pem'), key: join(h.tmp, 'key.pem') }, {
      basicAuth: { username: 'deploy', password: 's3cret-token' },
    });
  });
  afterAll(() => guarded?.close());

  it('uses them for the clone and stores them nowhere: not in the remote, the repository, the project or its events', async () => {
    const seq = await h.lastSeq();
    const url = `${guarded.origin.replace('https://', 'https://deploy:s3cret-token@')}/org/My.Repo.git`;
    const project = expectData(await clone({ url, name: 'with-auth' })).cloneProject;
    expect(project).toMatchObject({ headCommit: fixtureHead, trusted: false });
    // The server demanded them and got them.
    expect(guarded.authorizations).toContain(`Basic ${Buffer.from('deploy:s3cret-token').toString('base64')}`);
    expect(git(project.rootPath, fixtureEnv, 'config', '--get', 'remote.origin.url')).toBe(`${guarded.origin}/org/My.Repo.git`);
    const walk = async (dir: string): Promise<string[]> =>
      (await Promise.all((await readdir(dir, { withFileTypes: true })).map((d) => (d.isDirectory() ? walk(join(dir, d.name)) : [join(dir, d.name)])))).flat();
    const leaking = (await walk(join(project.rootPath, '.git'))).filter((f) => readFileSync(f).includes('s3cret-token'));
    expect(leaking).toEqual([]);
    expect(JSON.stringify(await h.eventsSince(seq))).not.toContain('s3cret');
    expect(JSON.stringify(await h.gql('{ projects { name rootPath } }'))).not.toContain('s3cret');
  });

  it('fails fast with UPSTREAM_FAILED, without prompting, when the server wants credentials the URL does not carry', async () => {
    const started = Date.now();
    const error = await h.expectRejectedUnchanged(() => clone({ url: `${guarded.origin}/org/My.Repo.git`, name: 'no-auth' }), 'UPSTREAM_FAILED');
    expect(error.message).toMatch(/could not read Username|Authentication failed|terminal prompts disabled/i);
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it('keeps wrong credentials out of the UPSTREAM_FAILED message', async () => {
    const url = `${guarded.origin.replace('https://', 'https://deploy:wrong-secret@')}/org/My.Repo.git`;
    const error = await h.expectRejectedUnchanged(() => clone({ url, name: 'wrong-auth' }), 'UPSTREAM_FAILED');
    expect(error.message).not.toContain('wrong-secret');
    expect(error.message).toContain(`clone of ${guarded.origin.replace('https://', 'https://***@')}/org/My.Repo.git failed`);
  });
});

describe('cloneProject: destination', () => {
  it('refuses an existing destination, even an empty folder, with CONFLICT and leaves it untouched', async () => {
    const dest = join(h.settings.workspaceRoot, 'taken');
    mkdirSync(dest);
    const error = await h.expectRejectedUnchanged(
      () => clone({ url: `${remote.origin}/org/My.Repo.git`, name: 'taken' }),
      'CONFLICT',
    );
    expect(error.extensions?.status).toBe(409);
    expect(error.message).toContain(dest);
    expect(readdirSync(dest)).toEqual([]);
  });

  it('fails an unreachable remote with UPSTREAM_FAILED, leaving no destination and keeping the pre-existing workspace root', async () => {
    const error = await h.expectRejectedUnchanged(
      () => clone({ url: 'https://127.0.0.1:1/x/repo.git', name: 'unreachable' }),
      'UPSTREAM_FAILED',
    );
    expect(error.extensions?.status).toBe(502);
    expect(existsSync(join(h.settings.workspaceRoot, 'unreachable'))).toBe(false);
    expect(existsSync(h.settings.workspaceRoot)).toBe(true);
  });

  it('keeps credentials in the URL out of the UPSTREAM_FAILED message', async () => {
    const error = await h.expectRejectedUnchanged(
      () => clone({ url: 'https://user:s3cret-token@127.0.0.1:1/x/repo.git', name: 'with-credentials' }),
      'UPSTREAM_FAILED',
    );
    expect(error.message).not.toContain('s3cret-token');
  });

  it('removes the workspace root it created when the clone fails', async () => {
    const parent = join(h.tmp, 'fresh-workspace');
    const variant = await h.startVariant({ workspaceRoot: join(parent, 'nested', 'root') });
    try {
      const error = await h.expectRejectedUnchanged(
        () => clone({ url: 'https://127.0.0.1:1/x/repo.git', name: 'unreachable' }, variant.gql),
        'UPSTREAM_FAILED',
      );
      expect(error.extensions?.status).toBe(502);
      expect(existsSync(parent)).toBe(false);
    } finally {
      await variant.stop();
    }
  });
});

describe('cloneProject: over https', () => {
  let project: ProjectView;
  let appended: Awaited<ReturnType<ProjectsHarness['eventsSince']>>;
  beforeAll(async () => {
    const seq = await h.lastSeq();
    project = expectData(await clone({ url: `${remote.origin}/org/My.Repo.git` })).cloneProject;
    appended = await h.eventsSince(seq);
  });

  it('clones over https and registers the project under a name derived from the URL, appending PROJECT_CLONED', async () => {
    const dest = join(h.settings.workspaceRoot, 'my-repo');
    expect(project).toMatchObject({ name: 'my-repo', rootPath: dest, isGitRepo: true, headCommit: fixtureHead, trusted: false });
    expect(readFileSync(join(dest, 'README.md'), 'utf8')).toBe('# My.Repo\n');
    expect(readFileSync(join(dest, 'src', 'app.txt'), 'utf8')).toBe('app\n');
    expect(appended).toEqual([{ type: 'PROJECT_CLONED', payload: { projectId: project.id } }]);
    const listed = expectData(await h.gql<{ projects: { id: string; name: string }[] }>('{ projects { id name } }')).projects;
    expect(listed).toContainEqual({ id: project.id, name: 'my-repo' });
    // Dumb HTTP: git fetched the static refs and objects from the server.
    expect(remote.requests).toContain('/org/My.Repo.git/info/refs');
  });

  it('runs no hooks while cloning: neither the global hooksPath nor the template', async () => {
    expect(existsSync(markers.hooksPath)).toBe(false);
    expect(existsSync(markers.template)).toBe(false);
    expect(existsSync(join(project.rootPath, '.git', 'hooks', 'post-checkout'))).toBe(false);
    // The hook configuration is live: a plain clone with the same environment runs it.
    const control = join(h.tmp, 'control-clone');
    await gitAsync(h.tmp, h.settings.gitEnv, 'clone', '--quiet', `${remote.origin}/org/My.Repo.git`, control);
    expect(existsSync(markers.hooksPath)).toBe(true);
    expect(existsSync(join(control, '.git', 'hooks', 'post-checkout'))).toBe(true);
  });

  it('refuses a second clone to a registered name with CONFLICT', async () => {
    const before = await snapshotTree(project.rootPath);
    await h.expectRejectedUnchanged(() => clone({ url: `${remote.origin}/org/My.Repo.git` }), 'CONFLICT');
    expect(await snapshotTree(project.rootPath)).toEqual(before);
  });

  it('lets one of two concurrent clones to one name register it; the other is CONFLICT and leaves the clone whole', async () => {
    const answers = await Promise.all([1, 2].map(() => clone({ url: `${remote.origin}/org/My.Repo.git`, name: 'raced' })));
    const won = answers.filter((a) => !a.errors);
    expect(won).toHaveLength(1);
    expect(answers.filter((a) => a.errors).map((a) => a.errors![0]!.extensions?.code)).toEqual(['CONFLICT']);
    const dest = join(h.settings.workspaceRoot, 'raced');
    expect(won[0]!.data!.cloneProject).toMatchObject({ rootPath: dest, headCommit: fixtureHead });
    expect(readFileSync(join(dest, 'README.md'), 'utf8')).toBe('# My.Repo\n');
    expect(await gitAsync(dest, h.settings.gitEnv, 'rev-parse', 'HEAD')).toBe(fixtureHead);
    // The root's lock went with the answers: no pooled connection keeps it.
    const held = await h.db.query(
      "SELECT count(*)::int AS n FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE l.locktype = 'advisory' AND d.datname = $1",
      [h.db.name],
    );
    expect(held).toEqual([{ n: 0 }]);
  });

  it('takes an explicit name over the derived one', async () => {
    const named = expectData(await clone({ url: `${remote.origin}/org/My.Repo.git`, name: 'renamed' })).cloneProject;
    expect(named).toMatchObject({ name: 'renamed', rootPath: join(h.settings.workspaceRoot, 'renamed'), headCommit: fixtureHead });
  });
});

describe('cloneProject: timeout', () => {
  it('kills a clone that outlives cloneTimeoutMs with UPSTREAM_FAILED, quickly, leaving no git process or destination', async () => {
    const silent = await serveSilence();
    const variant = await h.startVariant({ cloneTimeoutMs: 1500 });
    try {
      const url = `https://127.0.0.1:${silent.port}/org/stalled.git`;
      const gitProcesses = () =>
        execFileSync('ps', ['-eo', 'stat=,args='], { encoding: 'utf8' })
          .split('\n')
          .filter((line) => line.includes(`127.0.0.1:${silent.port}`) && !line.trim().startsWith('Z'));
      let elapsed = 0;
      let whileStalled: string[] = [];
      const error = await h.expectRejectedUnchanged(async () => {
        const started = Date.now();
        const pending = clone({ url, name: 'stalled' }, variant.gql);
        await new Promise((resolve) => setTimeout(resolve, 700));
        whileStalled = gitProcesses();
        const res = await within(8000, 'a clone with cloneTimeoutMs 1500', pending);
        elapsed = Date.now() - started;
        return res;
      }, 'UPSTREAM_FAILED');
      // The check below is not vacuous: while stalled, git and git-remote-https run with the URL.
      expect(whileStalled.length).toBeGreaterThanOrEqual(1);
      expect(error.message).toMatch(/timed out after 1500 ms/);
      expect(elapsed).toBeGreaterThanOrEqual(1500);
      expect(elapsed).toBeLessThan(6000);
      expect(existsSync(join(h.settings.workspaceRoot, 'stalled'))).toBe(false);
      // git and its helper (git-remote-https) were killed as a process group: none still runs with the URL.
      expect(gitProcesses()).toEqual([]);
    } finally {
      await variant.stop();
      await silent.close();
    }
  });
});
