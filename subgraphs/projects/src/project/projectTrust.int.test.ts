import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git } from '../../test/support/gitFixtures';
import { expectData, expectError, PROJECT_FIELDS, startProjectsHarness, type ProjectsHarness } from '../../test/support/projectsHarness';

jest.setTimeout(60_000);

interface ProjectView {
  id: string;
  name: string;
  trusted: boolean;
}

const CREATE = `mutation ($input: CreateProjectInput!) { createProject(input: $input) { ${PROJECT_FIELDS} } }`;
const SET_TRUST = `mutation ($p: ID!, $t: Boolean!) { setProjectTrust(projectId: $p, trusted: $t) { ${PROJECT_FIELDS} } }`;

let h: ProjectsHarness;
let scratch: (label: string) => string;

beforeAll(async () => {
  h = await startProjectsHarness();
  scratch = (label) => mkdtempSync(join(h.tmp, `${label}-`));
});
afterAll(() => h?.close());

async function create(input: Record<string, unknown>): Promise<ProjectView> {
  return expectData(await h.gql<{ createProject: ProjectView }>(CREATE, { input })).createProject;
}

/** A populated folder (a git repository when `repo`), with project workflows when `workflows`. */
function existingFolder(label: string, opts: { repo: boolean; workflows: boolean }): string {
  const root = scratch(label);
  writeFileSync(join(root, 'README.md'), '# existing\n');
  if (opts.workflows) {
    mkdirSync(join(root, '.keelson', 'workflows'), { recursive: true });
    writeFileSync(join(root, '.keelson', 'workflows', 'w.yaml'), 'name: w\nnodes:\n  - { id: a, type: bash, bash: "true" }\n');
  }
  if (opts.repo) {
    git(root, h.settings.gitEnv, 'init', '--quiet');
    git(root, h.settings.gitEnv, 'add', '.');
    git(root, h.settings.gitEnv, 'commit', '--quiet', '-m', 'existing');
  }
  return root;
}

describe('Project.trusted on creation', () => {
  it('trusts a project the mesh creates from a missing or an empty folder', async () => {
    expect((await create({ name: 'fresh' })).trusted).toBe(true);
    expect((await create({ name: 'empty', rootPath: scratch('empty') })).trusted).toBe(true);
  });

  it('trusts an existing folder that brings no workflows of its own', async () => {
    expect((await create({ name: 'plain-repo', rootPath: existingFolder('plain-repo', { repo: true, workflows: false }) })).trusted).toBe(true);
    expect((await create({ name: 'plain-dir', rootPath: existingFolder('plain-dir', { repo: false, workflows: false }) })).trusted).toBe(true);
  });

  it('does not silently trust an existing folder with its own .keelson/workflows', async () => {
    expect((await create({ name: 'flows-repo', rootPath: existingFolder('flows-repo', { repo: true, workflows: true }) })).trusted).toBe(false);
    expect((await create({ name: 'flows-dir', rootPath: existingFolder('flows-dir', { repo: false, workflows: true }) })).trusted).toBe(false);
  });
});

describe('setProjectTrust', () => {
  it('trusts and distrusts a project, appending PROJECT_TRUSTED / PROJECT_UNTRUSTED only when the value changes', async () => {
    const project = await create({ name: 'toggled', rootPath: existingFolder('toggled', { repo: true, workflows: true }) });
    expect(project.trusted).toBe(false);
    const seq = await h.lastSeq();

    const trusted = expectData(await h.gql<{ setProjectTrust: ProjectView }>(SET_TRUST, { p: project.id, t: true })).setProjectTrust;
    expect(trusted).toMatchObject({ id: project.id, trusted: true });
    expectData(await h.gql(SET_TRUST, { p: project.id, t: true }));
    const listed = expectData(await h.gql<{ project: ProjectView }>(`query ($p: ID) { project(id: $p) { id trusted } }`, { p: project.id })).project;
    expect(listed.trusted).toBe(true);
    expect(expectData(await h.gql<{ setProjectTrust: ProjectView }>(SET_TRUST, { p: project.id, t: false })).setProjectTrust.trusted).toBe(false);

    expect(await h.eventsSince(seq)).toEqual([
      { type: 'PROJECT_TRUSTED', payload: { projectId: project.id } },
      { type: 'PROJECT_UNTRUSTED', payload: { projectId: project.id } },
    ]);
  });

  it('ties trust to the workflow files: a changed or new file makes the project untrusted until it is trusted again', async () => {
    const root = existingFolder('content', { repo: false, workflows: true });
    const project = await create({ name: 'content', rootPath: root });
    const trustedNow = async () => expectData(await h.gql<{ project: ProjectView }>(`query ($p: ID) { project(id: $p) { trusted } }`, { p: project.id })).project.trusted;
    expectData(await h.gql(SET_TRUST, { p: project.id, t: true }));
    expect(await trustedNow()).toBe(true);
    const seq = await h.lastSeq();

    // A workflow file planted after the trust (by a sandboxed node, a pull): not trusted any more.
    writeFileSync(join(root, '.keelson', 'workflows', 'planted.yaml'), 'name: planted\nnodes:\n  - { id: a, type: bash, bash: "true" }\n');
    expect(await trustedNow()).toBe(false);
    // Trusting again covers the files as they are now, and is recorded.
    expect(expectData(await h.gql<{ setProjectTrust: ProjectView }>(SET_TRUST, { p: project.id, t: true })).setProjectTrust.trusted).toBe(true);
    // A changed file: untrusted again.
    writeFileSync(join(root, '.keelson', 'workflows', 'w.yaml'), 'name: w\nnodes:\n  - { id: a, type: bash, bash: "curl evil" }\n');
    expect(await trustedNow()).toBe(false);
    expect(await h.eventsSince(seq)).toEqual([{ type: 'PROJECT_TRUSTED', payload: { projectId: project.id } }]);

    // A project trusted with no workflows at all gets its first file: that needs trust too.
    const fresh = await create({ name: 'first-flow', rootPath: scratch('first-flow') });
    expect(fresh.trusted).toBe(true);
    const freshRoot = expectData(await h.gql<{ project: { rootPath: string } }>(`query ($p: ID) { project(id: $p) { rootPath } }`, { p: fresh.id })).project.rootPath;
    mkdirSync(join(freshRoot, '.keelson', 'workflows'), { recursive: true });
    writeFileSync(join(freshRoot, '.keelson', 'workflows', 'new.yaml'), 'name: new\nnodes: []\n');
    expect(expectData(await h.gql<{ project: ProjectView }>(`query ($p: ID) { project(id: $p) { trusted } }`, { p: fresh.id })).project.trusted).toBe(false);
  });

  it('keeps the value across a restart (it is a column, not memory)', async () => {
    const project = await create({ name: 'durable', rootPath: existingFolder('durable', { repo: false, workflows: true }) });
    expectData(await h.gql(SET_TRUST, { p: project.id, t: true }));
    await h.restart();
    const after = expectData(await h.gql<{ project: ProjectView }>(`query ($p: ID) { project(id: $p) { trusted } }`, { p: project.id })).project;
    expect(after.trusted).toBe(true);
  });

  it('answers an unknown project with NOT_FOUND and changes nothing', async () => {
    const error = await h.expectRejectedUnchanged(() => h.gql(SET_TRUST, { p: '00000000-0000-4000-8000-000000000000', t: true }), 'NOT_FOUND');
    expect(error.message).toContain('00000000-0000-4000-8000-000000000000');
    expectError(await h.gql(SET_TRUST, { p: 'not-a-uuid', t: true }), 'NOT_FOUND');
  });
});
