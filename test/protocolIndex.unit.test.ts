import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

// schema/PROTOCOL.md is an index: one heading per protocol, each linking to its file under
// schema/protocol/. Every file is indexed, every link lands, and the citations the tree makes
// ("schema/PROTOCOL.md "<section>"", PROTOCOL.md#<anchor>) name a section the index has.

const root = join(__dirname, '..');
const index = readFileSync(join(root, 'schema', 'PROTOCOL.md'), 'utf8');
const sections = [...index.matchAll(/^## (.+)\n\n→ \[`protocol\/([^`]+)`\]\(protocol\/([^)]+)\)$/gm)].map((m) => ({ title: m[1]!, file: m[2]!, href: m[3]! }));
const anchorOf = (title: string) => title.toLowerCase().replace(/[^a-z0-9 -]/g, '').replace(/ /g, '-');

function citingFiles(dir: string, rel = '', out: string[] = []): string[] {
  for (const entry of readdirSync(join(dir, rel), { withFileTypes: true })) {
    const path = rel ? `${rel}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      if (!['node_modules', 'dist', '.git', 'coverage'].includes(entry.name)) citingFiles(dir, path, out);
    } else if (/\.(ts|md|js)$/.test(entry.name) && !path.startsWith('schema/protocol/') && path !== 'schema/PROTOCOL.md') out.push(path);
  }
  return out;
}

describe('the protocol index', () => {
  it('links every protocol file once, each starting with its heading', () => {
    const files = readdirSync(join(root, 'schema', 'protocol')).filter((f) => f.endsWith('.md')).sort();
    expect(sections.map((s) => s.file).sort()).toEqual(files);
    for (const s of sections) {
      expect(s.href).toBe(s.file);
      expect(readFileSync(join(root, 'schema', 'protocol', s.file), 'utf8').split('\n')[0]).toBe(`# ${s.title}`);
    }
  });

  it('has a section for every citation in the tree, by name or by anchor', () => {
    const unknown: string[] = [];
    for (const file of citingFiles(root)) {
      if (file === 'test/protocolIndex.unit.test.ts') continue;
      const text = readFileSync(join(root, file), 'utf8');
      for (const m of text.matchAll(/PROTOCOL\.md[`)]?,? "([^"]+)"/g)) {
        // A citation may wrap across lines of a comment or a paragraph.
        const name = m[1]!.replace(/\s*\n\s*(\*\s*)?/g, ' ');
        if (!sections.some((s) => s.title.startsWith(name))) unknown.push(`${file}: "${name}"`);
      }
      for (const m of text.matchAll(/PROTOCOL\.md#([a-z0-9-]+)/g)) {
        if (!sections.some((s) => anchorOf(s.title) === m[1])) unknown.push(`${file}: #${m[1]}`);
      }
    }
    expect(unknown).toEqual([]);
  });
});
