import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { serveDumbHttps, selfSignedCert, type DumbHttpsRemote } from '@keelson/subgraph-projects/test/support/dumbHttpsRemote';
import { gql, gqlData } from './support/client';
import { startTestMesh, type TestMesh } from './support/mesh';
import { startWorkflow, waitForRun } from './support/runs';

// A cloned repository's .keelson/workflows: listed, never shadowing a bundled workflow, and run only
// once an operator trusts the project. The fixture remote is on loopback: this mesh allows exactly
// 127.0.0.1 (KEELSON_GIT_ALLOW_PRIVATE_HOSTS) and trusts its certificate.

/** A workflow leaving `marker` in the folder it runs in (the project root: bash nodes may write only there and in $ARTIFACTS_DIR). */
const touching = (name: string, marker: string) => `name: ${name}\nnodes:\n  - { id: pwn, type: bash, bash: "touch '${marker}'" }\n`;
const SHADOW_MARKER = 'shadowing-workflow-ran';
const EVIL_MARKER = 'project-workflow-ran';

let fixtures: string;
let remote: DumbHttpsRemote;
let mesh: TestMesh;
let pg: Client;
let project: { id: string; name: string; trusted: boolean; rootPath: string };
const ran = (marker: string) => existsSync(join(project.rootPath, marker));

const START = 'mutation ($n: String!, $p: ID) { startWorkflow(name: $n, projectId: $p) { id } }';

async function runCount(): Promise<number> {
  const { rows } = await pg.query<{ n: number }>('SELECT count(*)::int AS n FROM runs');
  return rows[0]!.n;
}

beforeAll(async () => {
  fixtures = realpathSync(mkdtempSync(join(tmpdir(), 'keelson-trust-')));
  const gitconfig = join(fixtures, 'gitconfig');
  writeFileSync(gitconfig, '[user]\n\tname = Fixture\n\temail = fixture@keelson.invalid\n[init]\n\tdefaultBranch = main\n');
  const env = { ...process.env, GIT_CONFIG_GLOBAL: gitconfig, GIT_CONFIG_NOSYSTEM: '1' };
  const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const src = join(fixtures, 'src');
  mkdirSync(join(src, '.keelson', 'workflows'), { recursive: true });
  writeFileSync(join(src, 'README.md'), '# a repository with workflows of its own\n');
  writeFileSync(join(src, '.keelson', 'workflows', 'project-check.yaml'), touching('project-check', SHADOW_MARKER));
  writeFileSync(join(src, '.keelson', 'workflows', 'evil.yaml'), touching('evil-build', EVIL_MARKER));
  git(src, 'init', '--quiet');
  git(src, 'add', '.');
  git(src, 'commit', '--quiet', '-m', 'workflows');
  const bare = join(fixtures, 'served', 'org', 'hostile.git');
  mkdirSync(join(fixtures, 'served', 'org'), { recursive: true });
  git(fixtures, 'clone', '--quiet', '--bare', src, bare);
  git(bare, 'update-server-info');
  const tls = selfSignedCert(fixtures);
  remote = await serveDumbHttps(join(fixtures, 'served'), tls);
  mesh = await startTestMesh({ KEELSON_GIT_ALLOW_PRIVATE_HOSTS: '127.0.0.1', GIT_SSL_CAINFO: tls.cert });
  pg = new Client({ connectionString: mesh.db.url });
  await pg.connect();
});
afterAll(async () => {
  await pg?.end();
  await mesh?.teardown();
  await remote?.close();
  rmSync(fixtures, { recursive: true, force: true });
});

it('clones the repository untrusted', async () => {
  ({ cloneProject: project } = await gqlData<{ cloneProject: typeof project }>(
    mesh.gatewayUrl,
    'mutation ($u: String!) { cloneProject(input: { url: $u }) { id name trusted rootPath } }',
    { u: `${remote.origin}/org/hostile.git` },
  ));
  expect(project).toMatchObject({ name: 'hostile', trusted: false });
});

it('lists its workflows, the one named like a bundled workflow as project:<name>, beside the bundled one', async () => {
  const { workflows } = await gqlData<{ workflows: { name: string; declaredName: string; scope: string }[] }>(
    mesh.gatewayUrl,
    'query ($p: ID) { workflows(projectId: $p) { name declaredName scope } }',
    { p: project.id },
  );
  expect(workflows).toEqual(
    expect.arrayContaining([
      { name: 'project-check', declaredName: 'project-check', scope: 'BUNDLED' },
      { name: 'project:project-check', declaredName: 'project-check', scope: 'PROJECT' },
      { name: 'evil-build', declaredName: 'evil-build', scope: 'PROJECT' },
    ]),
  );
});

it('refuses to start either while the project is untrusted: FORBIDDEN naming setProjectTrust, no run, nothing ran', async () => {
  const before = await runCount();
  for (const name of ['evil-build', 'project:project-check']) {
    const res = await gql(mesh.gatewayUrl, START, { n: name, p: project.id });
    expect(res.errors?.map((e) => e.extensions)).toEqual([expect.objectContaining({ code: 'FORBIDDEN', status: 403 })]);
    expect(res.errors![0]!.message).toContain(`setProjectTrust(projectId: "${project.id}", trusted: true)`);
    expect(res.data ?? null).toBeNull();
  }
  expect(await runCount()).toBe(before);
  expect([SHADOW_MARKER, EVIL_MARKER].filter(ran)).toEqual([]);
});

it('runs the bundled project-check under its own name in the project, not the repository one', async () => {
  const started = await startWorkflow(mesh.gatewayUrl, 'project-check', { projectId: project.id });
  const paused = await waitForRun(mesh.gatewayUrl, started.id, (r) => r.pendingApproval !== null, 60_000);
  expect(paused.nodes.filter((n) => n.status === 'SUCCEEDED').map((n) => n.id).sort()).toEqual(['inventory', 'report', 'status']);
  const { run } = await gqlData<{ run: { scope: string; workflowName: string } }>(mesh.gatewayUrl, 'query ($r: ID!) { run(id: $r) { scope workflowName } }', { r: started.id });
  expect(run).toEqual({ scope: 'BUNDLED', workflowName: 'project-check' });
  await gqlData(mesh.gatewayUrl, 'mutation ($r: ID!) { cancelRun(runId: $r) { ok } }', { r: started.id });
  expect(ran(SHADOW_MARKER)).toBe(false);
});

it('(control) runs the project workflow once an operator trusts the project, recording PROJECT_TRUSTED', async () => {
  const { setProjectTrust } = await gqlData<{ setProjectTrust: { trusted: boolean } }>(
    mesh.gatewayUrl,
    'mutation ($p: ID!) { setProjectTrust(projectId: $p, trusted: true) { trusted } }',
    { p: project.id },
  );
  expect(setProjectTrust.trusted).toBe(true);
  const started = await startWorkflow(mesh.gatewayUrl, 'evil-build', { projectId: project.id });
  const done = await waitForRun(mesh.gatewayUrl, started.id, (r) => ['SUCCEEDED', 'FAILED'].includes(r.status), 60_000);
  expect(done.status).toBe('SUCCEEDED');
  expect(ran(EVIL_MARKER)).toBe(true);
  const { rows } = await pg.query<{ type: string }>(`SELECT type FROM events WHERE stream = 'projects' AND key = $1 ORDER BY seq`, [project.id]);
  expect(rows.map((r) => r.type)).toEqual(['PROJECT_CLONED', 'PROJECT_TRUSTED']);
});
