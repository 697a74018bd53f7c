import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

// The architecture page's promises (ARCHITECTURE.md): every workspace has a layer, each package
// declares exactly the @keelson packages it imports, and the README's room map lists every room.
const root = join(__dirname, '..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { layers } = require('../scripts/layers') as { layers: { name: string; workspaces: string[] }[] };
const workspaces = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { workspaces: string[] }).workspaces;

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}
const manifestOf = (workspace: string): Manifest => JSON.parse(readFileSync(join(root, workspace, 'package.json'), 'utf8')) as Manifest;

function sourcesOf(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    if (entry === 'node_modules') continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...sourcesOf(path));
    else if (/\.(ts|js)$/.test(entry)) out.push(path);
  }
  return out;
}

const IMPORT = /(?:from\s+|import\s*\(\s*|require\(\s*|import\s+)['"](@keelson\/[a-z0-9-]+)/g;

function importedPackages(workspace: string): Set<string> {
  const found = new Set<string>();
  for (const file of sourcesOf(join(root, workspace))) {
    // A workspace nested in another (e.g. subgraphs/kit under subgraphs/) is its own package.
    const nested = workspaces.find((w) => w !== workspace && w.startsWith(`${workspace}/`) && relative(join(root, w), file).split('/')[0] !== '..');
    if (nested) continue;
    for (const m of readFileSync(file, 'utf8').matchAll(IMPORT)) found.add(m[1]!);
  }
  found.delete(manifestOf(workspace).name);
  return found;
}

describe('the architecture', () => {
  it('places every workspace in exactly one layer, and only workspaces', () => {
    const placed = layers.flatMap((l) => l.workspaces);
    expect([...placed].sort()).toEqual([...workspaces].sort());
    expect(new Set(placed).size).toBe(placed.length);
  });

  it.each(workspaces)('%s declares exactly the @keelson packages it imports', (workspace) => {
    const m = manifestOf(workspace);
    const declared = Object.keys({ ...m.dependencies, ...m.devDependencies }).filter((d) => d.startsWith('@keelson/'));
    expect([...importedPackages(workspace)].sort()).toEqual(declared.sort());
  });

  it('gives every workspace a unique package name', () => {
    const names = workspaces.map((w) => manifestOf(w).name);
    expect(new Set(names).size).toBe(names.length);
  });

  it("lists every workspace, scripts/, test/ and bench/ in the README's room map", () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const rooms = new Set([...readme.matchAll(/^\| `([^`]+)\/` \|/gm)].map((m) => m[1]));
    const missing = [...workspaces, 'scripts', 'test', 'bench'].filter((w) => !rooms.has(w));
    expect(missing).toEqual([]);
  });

  // One entry per deployable: every folder of apps/ is an app with its main.ts, and the room map's
  // apps/ row names each one.
  it("lists every app (apps/<name>/main.ts) in the README's room map", () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const row = readme.split('\n').find((line) => line.startsWith('| `apps/` |')) ?? '';
    const apps = readdirSync(join(root, 'apps')).filter((entry) => entry !== 'node_modules' && statSync(join(root, 'apps', entry)).isDirectory());
    expect(apps.length).toBeGreaterThan(0);
    expect(apps.filter((app) => !statSync(join(root, 'apps', app, 'main.ts'), { throwIfNoEntry: false })?.isFile())).toEqual([]);
    expect(apps.filter((app) => !row.includes(`\`apps/${app}/main.ts\``))).toEqual([]);
  });
});
