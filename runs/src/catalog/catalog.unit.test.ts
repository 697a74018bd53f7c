import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { workflowsDigest } from '@keelson/platform';
import { bundledWorkflowsDir, projectWorkflowsDir, WorkflowCatalog, type Catalog } from './catalog';
import type { RibWorkflowCandidate } from './ribSource';

const yaml = (name: string, marker: string) => `name: ${name}\ndescription: ${marker}\nnodes:\n  - { id: a, type: bash, bash: "echo ${marker}" }\n`;
const obj = (name: string, marker: string) => ({ name, description: marker, nodes: [{ id: 'a', type: 'bash', bash: `echo ${marker}` }] });
const who = (c: Catalog, name: string) => {
  const e = c.entries.find((x) => x.name === name);
  return e ? `${e.scope}${e.ribId ? `:${e.ribId}:${e.origin}` : ''}:${e.definition.description}` : undefined;
};

describe('the workflow catalog', () => {
  let dir: string;
  let bundled: string;
  let global: string;
  let project: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'keelson-catalog-'));
    bundled = join(dir, 'bundled');
    global = join(dir, 'home', 'workflows');
    project = join(dir, 'project');
    for (const d of [bundled, global, projectWorkflowsDir(project)]) await mkdir(d, { recursive: true });
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('lets the global scope shadow the bundled one and any file a rib entry; an untrusted project workflow shadows nothing and is qualified instead', async () => {
    await writeFile(join(bundled, 'a.yaml'), yaml('shared', 'bundled'));
    await writeFile(join(bundled, 'b.yml'), yaml('bundled-only', 'bundled'));
    await writeFile(join(global, 'shared.yaml'), yaml('shared', 'global'));
    await writeFile(join(global, 'g.json'), JSON.stringify(obj('global-only', 'global')));
    await writeFile(join(projectWorkflowsDir(project), 'x.yaml'), yaml('shared', 'project'));
    await writeFile(join(projectWorkflowsDir(project), 'from-rib.yaml'), yaml('rib-flow', 'project'));
    const ribs: RibWorkflowCandidate[] = [
      { ribId: 'demo', origin: 'code', definition: obj('rib-flow', 'demo-code') },
      { ribId: 'demo', origin: 'code', definition: obj('rib-only', 'demo-code') },
    ];
    const catalog = new WorkflowCatalog({ bundledDir: bundled, globalDir: global, ribs: { list: () => ribs } });

    const globally = await catalog.load();
    expect(who(globally, 'shared')).toBe('GLOBAL:global');
    expect(who(globally, 'bundled-only')).toBe('BUNDLED:bundled');
    expect(who(globally, 'global-only')).toBe('GLOBAL:global');
    expect(who(globally, 'rib-flow')).toBe('RIB:demo:code:demo-code');
    expect(who(globally, 'rib-only')).toBe('RIB:demo:code:demo-code');

    await writeFile(join(projectWorkflowsDir(project), 'own.yaml'), yaml('project-only', 'project'));
    const inProject = await catalog.load(project);
    // The bundled/home/rib workflow keeps its name; the project's is listed as project:<name>.
    expect(who(inProject, 'shared')).toBe('GLOBAL:global');
    expect(who(inProject, 'rib-flow')).toBe('RIB:demo:code:demo-code');
    expect(who(inProject, 'project:shared')).toBe('PROJECT:project');
    expect(who(inProject, 'project:rib-flow')).toBe('PROJECT:project');
    expect(who(inProject, 'project-only')).toBe('PROJECT:project');
    expect(inProject.entries.map((e) => e.name)).toEqual([
      'bundled-only',
      'global-only',
      'project-only',
      'project:rib-flow',
      'project:shared',
      'rib-flow',
      'rib-only',
      'shared',
    ]);
    expect(inProject.shadowed.map((s) => `${s.entry.name}: ${s.entry.scope} < ${s.by.scope}`)).toEqual(['shared: BUNDLED < GLOBAL']);
    expect(inProject.qualified.map((q) => `${q.entry.name} (${q.entry.definition.name}) beside ${q.keeps.scope}`)).toEqual([
      'project:rib-flow (rib-flow) beside RIB',
      'project:shared (shared) beside GLOBAL',
    ]);
    const shared = inProject.entries.find((e) => e.name === 'project:shared')!;
    expect(shared).toMatchObject({ path: join(projectWorkflowsDir(project), 'x.yaml'), source: yaml('shared', 'project') });
  });

  it('lets a trusted project shadow a home workflow (seed 000), never a bundled or a rib one; changed files lose that', async () => {
    await writeFile(join(bundled, 'check.yaml'), yaml('project-check', 'bundled'));
    await writeFile(join(global, 'shared.yaml'), yaml('shared', 'global'));
    await writeFile(join(projectWorkflowsDir(project), 'x.yaml'), yaml('shared', 'project'));
    await writeFile(join(projectWorkflowsDir(project), 'y.yaml'), yaml('project-check', 'project'));
    await writeFile(join(projectWorkflowsDir(project), 'z.yaml'), yaml('rib-flow', 'project'));
    const ribs: RibWorkflowCandidate[] = [{ ribId: 'demo', origin: 'code', definition: obj('rib-flow', 'demo-code') }];
    const catalog = new WorkflowCatalog({ bundledDir: bundled, globalDir: global, ribs: { list: () => ribs } });
    const trustedFor = await workflowsDigest(project);

    const trusted = await catalog.load(project, trustedFor);
    expect(who(trusted, 'shared')).toBe('PROJECT:project');
    expect(trusted.entries.some((e) => e.name === 'project:shared')).toBe(false);
    expect(trusted.shadowed.map((x) => `${x.entry.name}: ${x.entry.scope} < ${x.by.scope}`)).toEqual(['shared: GLOBAL < PROJECT']);
    expect([who(trusted, 'project-check'), who(trusted, 'project:project-check')]).toEqual(['BUNDLED:bundled', 'PROJECT:project']);
    expect([who(trusted, 'rib-flow'), who(trusted, 'project:rib-flow')]).toEqual(['RIB:demo:code:demo-code', 'PROJECT:project']);

    // Untrusted (no digest), or trusted for other files: today's rule, the home workflow keeps its name.
    for (const digest of [null, 'sha256:other']) {
      const inProject = await catalog.load(project, digest);
      expect([who(inProject, 'shared'), who(inProject, 'project:shared')]).toEqual(['GLOBAL:global', 'PROJECT:project']);
    }
    await writeFile(join(projectWorkflowsDir(project), 'x.yaml'), yaml('shared', 'changed'));
    expect(who(await catalog.load(project, trustedFor), 'shared')).toBe('GLOBAL:global');
  });

  it('never lets a project workflow take a bundled name, even with no home folder', async () => {
    await writeFile(join(bundled, 'check.yaml'), yaml('project-check', 'bundled'));
    await writeFile(join(projectWorkflowsDir(project), 'evil.yaml'), yaml('project-check', 'project'));
    const inProject = await new WorkflowCatalog({ bundledDir: bundled, globalDir: join(dir, 'none') }).load(project);
    expect(who(inProject, 'project-check')).toBe('BUNDLED:bundled');
    expect(who(inProject, 'project:project-check')).toBe('PROJECT:project');
  });

  it("keeps a rib's code entry over its own YAML, and the earlier-activated rib's entry across ribs", async () => {
    const ribs: RibWorkflowCandidate[] = [
      { ribId: 'first', origin: 'yaml', definition: undefined, path: '/ribs/first/workflows/w.yaml', source: yaml('w', 'first-yaml') },
      { ribId: 'first', origin: 'code', definition: obj('w', 'first-code') },
      { ribId: 'second', origin: 'code', definition: obj('w', 'second-code') },
      { ribId: 'second', origin: 'yaml', definition: undefined, path: '/ribs/second/workflows/only.yaml', source: yaml('second-only', 'second-yaml') },
    ];
    const catalog = await new WorkflowCatalog({ bundledDir: bundled, globalDir: global, ribs: { list: async () => ribs } }).load();
    expect(who(catalog, 'w')).toBe('RIB:first:code:first-code');
    expect(who(catalog, 'second-only')).toBe('RIB:second:yaml:second-yaml');
    expect(catalog.shadowed.map((s) => `${s.entry.ribId}/${s.entry.origin} < ${s.by.ribId}/${s.by.origin}`)).toEqual([
      'first/yaml < first/code',
      'second/code < first/code',
    ]);
    expect(catalog.entries.find((e) => e.name === 'second-only')).toMatchObject({ path: '/ribs/second/workflows/only.yaml', source: yaml('second-only', 'second-yaml') });
  });

  it('reports an invalid file or contribution naming the file, the field and the reason, and serves the rest', async () => {
    await writeFile(join(global, 'ok.yaml'), yaml('fine', 'global'));
    await writeFile(join(global, 'broken.yaml'), 'name: broken\nnodes:\n  - { id: a, type: bash, bash: "x" }\n  - { id: b, type: bash, bash: "y", depends_on: [c] }\n');
    await writeFile(join(global, 'garbled.yaml'), 'name: [unclosed\n');
    await writeFile(join(global, 'dup.yaml'), yaml('fine', 'again'));
    await writeFile(join(global, 'notes.txt'), 'not a workflow');
    const ribs: RibWorkflowCandidate[] = [{ ribId: 'demo', origin: 'code', definition: { name: 'bad', nodes: [{ id: 'p', type: 'bash', bash: 'x', allowed_tools: [] }] } }];
    const catalog = await new WorkflowCatalog({ bundledDir: bundled, globalDir: global, ribs: { list: () => ribs } }).load();
    expect(catalog.entries.map((e) => e.name)).toEqual(['fine']);
    expect(catalog.entries[0]!.path).toBe(join(global, 'dup.yaml'));
    expect(catalog.errors.map((e) => e.message)).toEqual([
      'rib demo: definition.nodes.0: Unrecognized key: "allowed_tools"',
      `${join(global, 'broken.yaml')}: definition.nodes.1.depends_on.0: unknown node "c" (known: a, b)`,
      expect.stringMatching(new RegExp(`^${join(global, 'garbled.yaml').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: not valid YAML/JSON: `)),
      `${join(global, 'ok.yaml')}: workflow "fine" is already defined by ${join(global, 'dup.yaml')}; this file is ignored`,
    ]);
  });

  it('applies an edited, added or removed file at the next load, and parses an unchanged one only once', async () => {
    await writeFile(join(global, 'kept.yaml'), yaml('kept', 'v1'));
    await writeFile(join(global, 'edited.yaml'), yaml('edited', 'v1'));
    await writeFile(join(global, 'removed.yaml'), yaml('removed', 'v1'));
    await writeFile(join(projectWorkflowsDir(project), 'own.yaml'), yaml('own', 'v1'));
    const catalog = new WorkflowCatalog({ bundledDir: bundled, globalDir: global });
    const first = await catalog.load(project);

    await writeFile(join(global, 'edited.yaml'), yaml('edited', 'v2'));
    await writeFile(join(global, 'added.yaml'), yaml('added', 'v1'));
    await rm(join(global, 'removed.yaml'));
    const second = await catalog.load(project);

    expect(second.entries.map((e) => `${e.name}:${e.definition.description}`)).toEqual(['added:v1', 'edited:v2', 'kept:v1', 'own:v1']);
    // The same parsed entry while its file's text is unchanged (no second parse), a new one for the edit.
    const entry = (c: Catalog, name: string) => c.entries.find((e) => e.name === name);
    expect(entry(second, 'kept')).toBe(entry(first, 'kept'));
    expect(entry(second, 'own')).toBe(entry(first, 'own'));
    expect(entry(second, 'edited')).not.toBe(entry(first, 'edited'));

    // A file back at an earlier text reads as that text.
    await writeFile(join(global, 'edited.yaml'), yaml('edited', 'v1'));
    expect(who(await catalog.load(project), 'edited')).toBe('GLOBAL:v1');
  });

  it("digests exactly the files it read, as the project's trust does: workflow files count, other files do not", async () => {
    const root = join(dir, 'digested');
    const wf = projectWorkflowsDir(root);
    await mkdir(join(wf, 'sub.yaml'), { recursive: true });
    await writeFile(join(wf, 'a.yaml'), 'name: a\nnodes:\n  - { id: x, type: bash, bash: "true" }\n');
    await writeFile(join(wf, 'README.md'), 'not a workflow\n');
    const catalog = new WorkflowCatalog({ bundledDir: join(dir, 'nope'), globalDir: join(dir, 'nope-too') });
    const first = (await catalog.load(root)).projectDigest;
    expect(first).toBe(await workflowsDigest(root));
    await writeFile(join(wf, 'README.md'), 'still not a workflow\n');
    expect((await catalog.load(root)).projectDigest).toBe(first);
    // A broken file counts too: trust covers every file the catalog reads, not only those that parse.
    await writeFile(join(wf, 'B.YML'), 'nodes: [');
    const second = (await catalog.load(root)).projectDigest;
    expect([second === first, second === (await workflowsDigest(root))]).toEqual([false, true]);
    await writeFile(join(wf, 'a.yaml'), 'name: a\nnodes:\n  - { id: x, type: bash, bash: "false" }\n');
    expect((await catalog.load(root)).projectDigest).not.toBe(second);
  });

  it('treats missing folders as empty scopes', async () => {
    const catalog = await new WorkflowCatalog({ bundledDir: join(dir, 'nope'), globalDir: join(dir, 'nope-too') }).load(join(dir, 'no-project'));
    // …and a missing project folder has a digest: the one trust records for a project without workflows.
    expect(catalog).toEqual({ entries: [], errors: [], shadowed: [], qualified: [], projectDigest: await workflowsDigest(join(dir, 'no-project')) });
    expect(catalog.projectDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('ships bundled workflows that validate', async () => {
    const catalog = await new WorkflowCatalog({ bundledDir: bundledWorkflowsDir, globalDir: join(dir, 'none') }).load();
    expect(catalog.errors).toEqual([]);
    expect(catalog.entries.map((e) => [e.name, e.scope])).toEqual([
      ['plan-implement', 'BUNDLED'],
      ['project-check', 'BUNDLED'],
    ]);
    const planImplement = catalog.entries[0]!.definition;
    expect(planImplement.worktree.enabled).toBe(true);
    expect(planImplement.nodes.map((n) => n.type)).toEqual(['prompt', 'approval', 'prompt', 'bash', 'bash']);
    expect(planImplement.nodes.find((n) => n.id === 'commit')).toMatchObject({ type: 'bash', gitWrite: true });
  });
});
