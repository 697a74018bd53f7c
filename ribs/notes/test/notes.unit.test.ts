import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NoteStore, tagsOf, noteTitleOf } from '../src/noteStore';
import { renderCanvas, renderMarkdown } from '../src/render';
import { secretIn } from '../src/secrets';

describe('the note store', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'keelson-notes-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('creates its file on the first write, private to the operator, and reads back newest first', async () => {
    const store = new NoteStore(join(dir, 'rib-notes'));
    expect(await store.list()).toEqual([]);
    const first = await store.add({ text: 'Ship the #release notes\nbody', source: 'tool' });
    const second = await store.add({ text: 'Call Ada about #release #infra', source: 'ingest', sourceConversationId: 'c1' });
    expect(first).toMatchObject({ title: 'Ship the #release notes', tags: ['release'], pinned: false, source: 'tool' });
    expect((await store.list()).map((n) => n.id)).toEqual([second.id, first.id]);
    expect(statSync(store.file).mode & 0o777).toBe(0o600);
  });

  it('serializes concurrent writes so none is lost', async () => {
    const store = new NoteStore(dir);
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.add({ text: `note ${i}`, source: 'tool' })));
    expect(await store.list()).toHaveLength(20);
  });

  it('pins, removes, clears and searches by words and #tags', async () => {
    const store = new NoteStore(dir);
    const a = await store.add({ text: 'alpha beta #x', source: 'tool' });
    await store.add({ text: 'alpha gamma', source: 'tool' });
    expect(await store.setPinned(a.id, true)).toBe(true);
    expect((await store.get(a.id))?.pinned).toBe(true);
    expect((await store.search('alpha')).length).toBe(2);
    expect((await store.search('#x alpha')).map((n) => n.id)).toEqual([a.id]);
    expect(await store.remove(a.id)).toBe(true);
    expect(await store.remove(a.id)).toBe(false);
    expect(await store.clear()).toBe(1);
    expect(await store.list()).toEqual([]);
  });

  it('refuses to read a corrupt file as empty', async () => {
    const store = new NoteStore(dir);
    await store.add({ text: 'x', source: 'tool' });
    writeFileSync(store.file, '{"nope": true}');
    await expect(store.list()).rejects.toThrow(/not a notes file/);
    expect(readFileSync(store.file, 'utf8')).toBe('{"nope": true}');
  });

  it('derives titles and tags', () => {
    expect(noteTitleOf('\n\n  First line  \nsecond')).toBe('First line');
    expect(noteTitleOf('x'.repeat(100))).toHaveLength(80);
    expect(tagsOf('#One two #one #three-4 a#b')).toEqual(['one', 'three-4']);
  });
});

describe('secret detection', () => {
  it.each([
    ['-----BEGIN OPENSSH PRIVATE KEY-----', 'a private key block'],
    ['key AKIAABCDEFGHIJKLMNOP here', 'an AWS access key id'],
    [`ghp_${'a'.repeat(36)}`, 'a GitHub token'],
    [`sk-${'A'.repeat(24)}`, 'an OpenAI-style API key'],
  ])('spots %s', (text, kind) => {
    expect(secretIn(text)).toBe(kind);
  });

  it('lets ordinary text through', () => {
    expect(secretIn('remember to rotate the keys on friday')).toBeUndefined();
  });
});

describe('rendering', () => {
  const note = { id: 'abcdef12', title: '<b>hi</b>', text: '<script>alert(1)</script>', tags: ['x'], pinned: true, source: 'tool' as const, createdAt: '2024-01-01T00:00:00Z' };

  it('escapes note text in the html canvas and offers only canvas-safe verbs', () => {
    const html = renderCanvas([note]);
    expect(html).not.toContain('<script>alert(1)</script>');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    const verbs = [...html.matchAll(/data-action="([^"]+)"/g)].map((m) => m[1]);
    expect(new Set(verbs)).toEqual(new Set(['unpin', 'discuss']));
  });

  it('renders a markdown list with pins first', () => {
    expect(renderMarkdown([])).toBe('_No notes yet._\n');
    expect(renderMarkdown([note])).toContain('📌 **<b>hi</b>** (abcdef12) #x');
  });
});
