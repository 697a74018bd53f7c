import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { shippedSources } from './support/sourceFiles';

// ARCHITECTURE.md "Who owns which tables" against the code: the tables each package's migrations
// create, less those a later migration of the same package moved into the platform's cursor table.

const root = join(__dirname, '..');
const workspaces = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { workspaces: string[] }).workspaces;
const packageOf = (file: string) => workspaces.filter((w) => file.startsWith(`${w}/`)).sort((a, b) => b.length - a.length)[0];

function tablesInCode(): Record<string, string[]> {
  const created = new Map<string, Set<string>>();
  const moved = new Set<string>();
  for (const file of shippedSources(root)) {
    const text = readFileSync(join(root, file), 'utf8');
    const pkg = packageOf(file);
    if (!pkg) continue;
    for (const m of text.matchAll(/CREATE TABLE (?:IF NOT EXISTS )?([a-z_]+)|\bcursorTableSql\('([a-z_]+)'/g)) {
      if (!created.has(pkg)) created.set(pkg, new Set());
      created.get(pkg)!.add((m[1] ?? m[2])!);
    }
    for (const m of text.matchAll(/\bmoveCursorsToPlatform\('([a-z_]+)'\)/g)) moved.add(m[1]!);
  }
  return Object.fromEntries([...created].map(([pkg, tables]) => [pkg, [...tables].filter((t) => !moved.has(t)).sort()]).filter(([, t]) => t.length).sort());
}

function tablesInDoc(): Record<string, string[]> {
  const doc = readFileSync(join(root, 'ARCHITECTURE.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Who owns which tables'), doc.indexOf('`test/architectureDoc.unit.test.ts` reads'));
  const rows = [...section.matchAll(/^\| `([^`]+)`[^|]*\| (.+) \|$/gm)];
  return Object.fromEntries(
    rows.map((r) => [r[1]!, [...r[2]!.replace(/\([^)]*\)/g, '').matchAll(/`([a-z_]+)`/g)].map((t) => t[1]!).sort()]).sort(),
  );
}

/** `apps/<name>/main.ts` entries the "Where each process starts" table names. */
function entriesInDoc(): string[] {
  const doc = readFileSync(join(root, 'ARCHITECTURE.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Where each process starts'), doc.indexOf('## Adding a package'));
  return [...new Set([...section.matchAll(/apps\/([a-z-]+|<name>)\/main\.ts/g)].map((m) => m[1]!))].sort();
}

describe('ARCHITECTURE.md', () => {
  it('names every process entry under apps/ where it says where each process starts', () => {
    const apps = readdirSync(join(root, 'apps'), { withFileTypes: true }).filter((d) => d.isDirectory() && existsSync(join(root, 'apps', d.name, 'main.ts'))).map((d) => d.name);
    const named = entriesInDoc();
    // A row may stand for several subgraph entries as apps/<name>/main.ts with their names listed.
    const listedByName = (app: string) => named.includes(app) || (named.includes('<name>') && new RegExp(`\\b${app}\\b`).test(readFileSync(join(root, 'ARCHITECTURE.md'), 'utf8').split('## Where each process starts')[1]!.split('\n').find((l) => l.includes('apps/<name>/main.ts')) ?? ''));
    expect(apps.length).toBeGreaterThan(5);
    expect(apps.filter((app) => !listedByName(app))).toEqual([]);
  });

  it('lists every table the migrations create, on the row of the package that creates it', () => {
    const code = tablesInCode();
    expect(Object.keys(code).length).toBeGreaterThan(5);
    expect(tablesInDoc()).toEqual(code);
  });
});
