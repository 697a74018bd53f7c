import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createExec, createRibHost, InMemorySnapshotStore, type ManifestInvalidation, type RibHost } from '@keelson/host';
import { InMemoryCredentialStore, InMemoryProjectsPort, staticConfigPort } from '@keelson/host-doubles';
import notesRib from '@keelson/rib-notes';
import projectsRib, { type Board, type ProjectDetail } from '@keelson/rib-projects';
import { silentLogger } from '@keelson/service';
import { execWithEnv } from '../src/exec';
import { GitSandbox } from './support/gitFixture';

// The built-in ribs inside a real host, running real git, over the in-memory ports.

interface Booted {
  host: RibHost;
  projects: InMemoryProjectsPort;
  credentials: InMemoryCredentialStore;
  store: InMemorySnapshotStore;
  home: string;
  nudges: ManifestInvalidation[];
}

const hosts: RibHost[] = [];
const homes: string[] = [];
async function boot(sandbox: GitSandbox): Promise<Booted> {
  const home = mkdtempSync(join(tmpdir(), 'keelson-home-'));
  homes.push(home);
  const projects = new InMemoryProjectsPort(join(sandbox.dir, 'workspace'));
  const credentials = new InMemoryCredentialStore();
  const store = new InMemorySnapshotStore();
  const host = await createRibHost({
    available: { projects: projectsRib, notes: notesRib },
    env: {},
    home,
    logger: silentLogger(),
    config: staticConfigPort({}),
    snapshotStore: store,
    credentials,
    projects,
    exec: execWithEnv(createExec(), sandbox.env),
  });
  hosts.push(host);
  const nudges: ManifestInvalidation[] = [];
  host.onManifestInvalidated((n) => nudges.push(n));
  return { host, projects, credentials, store, home, nudges };
}

afterAll(async () => {
  await Promise.all(hosts.map((h) => h.dispose()));
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

describe('@keelson/rib-projects', () => {
  const sandbox = new GitSandbox();
  let booted: Booted;
  let alphaId: string;
  afterAll(() => sandbox.cleanup());

  beforeAll(async () => {
    booted = await boot(sandbox);
    const alpha = sandbox.repo('alpha');
    sandbox.upstream(alpha);
    writeFileSync(join(alpha, 'feature.ts'), 'export const x = 1;\n');
    sandbox.git(alpha, 'add', 'feature.ts');
    sandbox.git(alpha, 'commit', '--quiet', '-m', 'Add the feature');
    writeFileSync(join(alpha, 'README.md'), '# alpha, edited\n');
    writeFileSync(join(alpha, 'scratch.txt'), 'wip\n');
    const plain = join(sandbox.dir, 'plain');
    mkdirSync(plain);
    const ctx = booted.host.context('projects')!;
    alphaId = (await ctx.createProject!({ name: 'alpha', rootPath: alpha })).id;
    await ctx.createProject!({ name: 'plain', rootPath: plain });
    await ctx.createProject!({ name: 'gone', rootPath: join(sandbox.dir, 'gone') });
    await booted.projects.acquireWorkspace({ projectId: alphaId, purpose: 'review' });
    await booted.projects.acquireMutationLock({ projectId: alphaId, purpose: 'rebase', holder: 'rib:other' });
  });

  it('composes nothing at boot (composers are lazy)', async () => {
    expect(await booted.host.readSnapshot('rib:projects')).toBeUndefined();
  });

  it("refresh composes a board of every project from real git output, leases and the lock holder", async () => {
    const result = await booted.host.ribAction('projects', 'refresh');
    expect(result).toEqual({ ok: true, data: { key: 'rib:projects', version: 1, projects: 3 } });
    const board = (await booted.host.readSnapshot('rib:projects'))!.payload as Board;
    const [alpha, plain, gone] = board.projects;
    expect(alpha).toMatchObject({
      name: 'alpha',
      state: 'ok',
      branch: 'main',
      unborn: false,
      upstream: 'origin/main',
      ahead: 1,
      behind: 0,
      dirty: { total: 2, staged: 0, unstaged: 1, untracked: 1, conflicted: 0 },
      lastCommit: { subject: 'Add the feature', author: 'Keelson Test' },
      worktrees: 1,
      leases: [{ purpose: 'review', checkedOut: false }],
      lock: { holder: 'rib:other', purpose: 'rebase' },
    });
    expect(alpha!.dirty.files).toEqual([
      { path: 'README.md', status: '.M' },
      { path: 'scratch.txt', status: '??' },
    ]);
    expect(plain).toMatchObject({ state: 'not-git', branch: null });
    expect(gone).toMatchObject({ state: 'missing' });
    expect(board.totals).toEqual({ projects: 3, dirty: 1, leases: 1, locked: 1 });
    expect(board.git.available).toBe(true);
  });

  it('bumps the version on every refresh and keeps the badge in step', async () => {
    const again = await booted.host.ribAction('projects', 'refresh');
    expect(again).toMatchObject({ ok: true, data: { version: 2 } });
    await new Promise((r) => setTimeout(r, 50));
    const badge = await booted.host.readSnapshot('rib:projects:badge');
    expect(badge?.payload).toEqual({ count: 2, title: '2 projects need a look: alpha, gone' });
  });

  it('open-project docks a side inspector, adding its view live and nudging clients to re-fetch the manifest', async () => {
    const before = booted.nudges.length;
    const result = await booted.host.ribAction('projects', 'open-project', { name: 'alpha' });
    const key = `rib:projects:project:${alphaId}`;
    expect(result).toEqual({ ok: true, data: { effect: 'open-canvas', key, title: 'alpha', placement: 'side' } });
    expect(booted.nudges.slice(before)).toEqual([expect.objectContaining({ ribId: 'projects', reason: 'rib-invalidated' })]);
    const manifest = await booted.host.manifest();
    expect(manifest.ribs.find((r) => r.id === 'projects')!.views).toContainEqual({ key, canvasKind: 'view', title: 'alpha' });
    const detail = (await booted.host.readSnapshot(key))!.payload as ProjectDetail;
    expect(detail.commits.map((c) => c.subject)).toEqual(['Add the feature', 'Initial commit']);
    // Opening it again recomposes without a second view or nudge.
    await booted.host.ribAction('projects', 'open-project', { projectId: alphaId });
    expect(booted.nudges.length).toBe(before + 1);
  });

  it('refuses every verb from an html canvas, and unknown verbs and payloads from the board', async () => {
    expect(await booted.host.canvasAction('projects', 'refresh')).toEqual({ ok: false, error: expect.stringMatching(/board action.*no actions from an html canvas/) });
    expect(await booted.host.ribAction('projects', 'explode')).toMatchObject({ ok: false, error: expect.stringMatching(/unknown action/) });
    expect(await booted.host.ribAction('projects', 'open-project', { name: 'nope' })).toMatchObject({ ok: false, error: expect.stringMatching(/no project "nope"/) });
  });

  it('serves projects_list and projects_status through the shared tool registry', async () => {
    const list = await booted.host.executeTool({ name: 'projects_list', input: {}, surface: 'chat' });
    expect(list).toMatchObject({ status: 'ok' });
    expect(list.content).toMatch(/alpha .* main · ↑1 ↓0 · 2 changed files/);
    const status = await booted.host.executeTool({ name: 'projects_status', input: { project: 'alpha' }, surface: 'chat' });
    expect(status.content).toContain('?? scratch.txt');
    expect(status.content).toContain("mutation lock: rib:other for 'rebase'");
    const missing = await booted.host.executeTool({ name: 'projects_status', input: { project: 'zeta' }, surface: 'chat' });
    expect(missing).toMatchObject({ isError: true, content: expect.stringMatching(/No project/) });
  });

  it('reports git and the configured identity as its auth status', async () => {
    expect(await booted.host.authStatus('projects')).toEqual({ authenticated: true, statusMessage: expect.stringMatching(/^git \S+ · Keelson Test <test@keelson\.invalid>$/) });
    const anonymous = new GitSandbox(null);
    try {
      const other = await boot(anonymous);
      expect(await other.host.authStatus('projects')).toEqual({ authenticated: false, statusMessage: expect.stringMatching(/no identity \(user\.name, user\.email\)/) });
    } finally {
      anonymous.cleanup();
    }
  });

  it('contributes docs the keelson_docs tool indexes into H1 topics', async () => {
    const topics = await booted.host.executeTool({ name: 'keelson_docs', input: { source: booted.host.docs.list().find((s) => s.title === 'Projects board')!.id }, surface: 'chat' });
    expect(topics.content).toMatch(/1\. The board\n2\. Actions\n3\. Tools/);
  });
});

describe('@keelson/rib-notes', () => {
  const sandbox = new GitSandbox();
  let booted: Booted;
  afterAll(() => sandbox.cleanup());
  beforeAll(async () => {
    booted = await boot(sandbox);
  });

  it('stores an ingested chat message under its data dir and republishes the html canvas', async () => {
    const result = await booted.host.ingest('notes', { text: 'Plan the <release> #launch\ndetails', sourceConversationId: 'conv-1' });
    expect(result).toMatchObject({ ok: true, data: { title: 'Plan the <release> #launch' } });
    const stored = JSON.parse(readFileSync(join(booted.home, 'rib-notes', 'notes.json'), 'utf8')) as { notes: { sourceConversationId?: string }[] };
    expect(stored.notes[0]).toMatchObject({ sourceConversationId: 'conv-1', source: 'ingest' });
    const canvas = await booted.host.readSnapshot('rib:notes');
    expect(canvas?.payload).toEqual(expect.stringContaining('Plan the &lt;release&gt; #launch'));
    expect((await booted.host.readSnapshot('rib:notes:list'))?.payload).toContain('**Plan the <release> #launch**');
  });

  it('refuses an ingest that carries a secret, and an empty one at the host edge', async () => {
    expect(await booted.host.ingest('notes', { text: 'aws AKIAABCDEFGHIJKLMNOP' })).toEqual({ ok: false, error: expect.stringMatching(/AWS access key id; notes never store secrets/) });
    await expect(booted.host.ingest('notes', { text: '' })).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
  });

  it('gates canvas actions to pin / unpin / discuss: a board verb from a canvas is refused, from the board it runs', async () => {
    const id = (JSON.parse(readFileSync(join(booted.home, 'rib-notes', 'notes.json'), 'utf8')) as { notes: { id: string }[] }).notes[0]!.id;
    expect(await booted.host.canvasAction('notes', 'delete-note', { id })).toEqual({
      ok: false,
      error: "'delete-note' is reserved for the board; an html canvas may only pin, unpin, discuss",
    });
    expect(await booted.host.canvasAction('notes', 'ingest', { text: 'x' })).toMatchObject({ ok: false, error: expect.stringMatching(/reserved for the board/) });
    expect(await booted.host.canvasAction('notes', 'pin', { id })).toEqual({ ok: true, data: { id, pinned: true } });
    const discuss = await booted.host.canvasAction('notes', 'discuss', { id });
    expect(discuss).toMatchObject({ ok: true, data: { effect: 'open-chat', seed: { name: 'About: Plan the <release> #launch' } } });
    expect(await booted.host.ribAction('notes', 'delete-note', { id })).toEqual({ ok: true, data: { id, deleted: true } });
  });

  it('offers commands with type-ahead (the full set for an empty prefix) that resolve to closed effects', async () => {
    await booted.host.ribAction('notes', 'add-note', { text: 'Deploy checklist #ops #launch' });
    expect((await booted.host.commands('notes')).map((c) => c.name)).toEqual(['notes', 'notes-agent']);
    expect(await booted.host.completeCommand('notes', 'notes', '')).toEqual([
      { value: '#launch', description: 'tag' },
      { value: '#ops', description: 'tag' },
      { value: 'Deploy checklist #ops #launch', description: expect.stringMatching(/^note /) },
    ]);
    expect((await booted.host.completeCommand('notes', 'notes', '#o')).map((c) => c.value)).toEqual(['#ops']);
    expect((await booted.host.completeCommand('notes', 'notes-agent', '')).map((c) => c.value)).toEqual(['scribe', 'critic']);
    expect(await booted.host.invokeCommand('notes', 'notes-agent', 'critic')).toEqual({ ok: true, effect: { effect: 'open-agent', ribId: 'notes', slug: 'critic' } });
    expect(await booted.host.invokeCommand('notes', 'notes', '#ops')).toEqual({ ok: true, effect: { effect: 'message', markdown: expect.stringContaining('**Deploy checklist #ops #launch**') } });
    expect(await booted.host.invokeCommand('notes', 'notes-agent', 'nobody')).toMatchObject({ ok: false });
  });

  it('resolves its agents to chat seeds carrying the notes, and null for an unknown slug', async () => {
    expect((await booted.host.agents('notes')).map((a) => a.slug)).toEqual(['scribe', 'critic']);
    const seed = await booted.host.resolveAgent('notes', 'scribe');
    expect(seed).toMatchObject({ name: 'Scribe', openingPrompt: 'Summarize my notes.', systemPrompt: expect.stringContaining('## Deploy checklist #ops #launch') });
    expect(await booted.host.resolveAgent('notes', 'ghost')).toBeNull();
  });

  it('denies a notes_add call carrying a secret through its policy, before the tool runs', async () => {
    const denied = await booted.host.executeTool({ name: 'notes_add', input: { text: `token ghp_${'x'.repeat(36)}` }, surface: 'chat' });
    expect(denied).toMatchObject({ status: 'policy-denied', policyId: 'notes:no-secrets', content: expect.stringMatching(/GitHub token/) });
    const saved = await booted.host.executeTool({ name: 'notes_add', input: { text: 'fine #ok' }, surface: 'chat' });
    expect(saved).toMatchObject({ status: 'ok', content: expect.stringMatching(/^Saved note [0-9a-f]+: fine #ok \(#ok\)$/) });
  });

  it('signs exports with its own credential only, and reports it as auth status', async () => {
    expect(await booted.host.authStatus('notes')).toMatchObject({ authenticated: false });
    const unsigned = await booted.host.executeTool({ name: 'notes_export', input: {}, surface: 'chat' });
    expect(unsigned).toMatchObject({ isError: true, content: expect.stringMatching(/npm run credential -- set notes signing-key/) });
    booted.credentials.set('rib_projects_signing-key', 'not yours');
    expect(await booted.host.authStatus('notes')).toMatchObject({ authenticated: false });
    booted.credentials.set('rib_notes_signing-key', 's3cret');
    expect(await booted.host.authStatus('notes')).toEqual({ authenticated: true, statusMessage: 'signing key configured' });
    const signed = await booted.host.executeTool({ name: 'notes_export', input: {}, surface: 'chat' });
    const { body, signature } = JSON.parse(signed.content) as { body: string; signature: string };
    const { createHmac } = await import('node:crypto');
    expect(signature).toBe(`hmac-sha256:${createHmac('sha256', 's3cret').update(body).digest('hex')}`);
    expect(booted.credentials.reads).not.toContain('rib_projects_signing-key');
  });
});
