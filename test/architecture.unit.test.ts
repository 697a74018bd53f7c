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

  // Test doubles stay in tests: no shipped file of a production workspace (nor its index) names a
  // package of the testing layer; a workspace's tests and test/ support files may.
  it('keeps the testing layer out of shipped code', () => {
    const testing = layers.filter((l) => (l as { testOnly?: boolean }).testOnly).flatMap((l) => l.workspaces);
    expect(testing.length).toBeGreaterThan(0);
    const doubles = new Set(testing.map((w) => manifestOf(w).name));
    const offenders: string[] = [];
    for (const workspace of workspaces.filter((w) => !testing.includes(w))) {
      for (const file of sourcesOf(join(root, workspace))) {
        const rel = relative(root, file);
        if (isTestSource(rel)) continue;
        for (const m of readFileSync(file, 'utf8').matchAll(IMPORT)) if (doubles.has(m[1]!)) offenders.push(`${rel} imports ${m[1]}`);
      }
    }
    expect(offenders).toEqual([]);
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

  // One name, one thing: an exported name is declared once in the monorepo's non-test source, so an
  // import or a search names what it means. Two kinds of declaration stand outside the rule, since
  // their names are not ours to choose: a type-graphql type (a class decorated @ObjectType,
  // @InputType or @InterfaceType, or an enum registered under its own name) is named by the GraphQL
  // schema, where federation wants an entity's stub named alike in every subgraph that extends it;
  // and client/src/gql/ is written by graphql-codegen from that schema.
  it('declares each exported name once in non-test source', () => {
    expect(repeatedExportNames()).toEqual([]);
  });
});

const EXPORTED = /^export\s+(?:declare\s+)?(?:default\s+)?(?:abstract\s+)?(?:async\s+)?(?:function\*?|class|interface|type|const|let|var|enum)\s+([A-Za-z_$][\w$]*)/gm;
const GENERATED = ['client/src/gql/'];
const isTestSource = (rel: string) => /(^|\/)(test|testing)\//.test(rel) || /\.test\.ts$/.test(rel);

/** Whether the declaration at `index` of `text` is a type-graphql type named by the schema. */
function isGraphqlType(text: string, index: number, name: string): boolean {
  // The decorators above a class sit between it and the previous top-level statement.
  const above = text.slice(0, index).split('\n').slice(0, -1).reverse();
  const boundary = above.findIndex((line) => /^(export|import|}|const|function|class)\b/.test(line));
  if (above.slice(0, boundary === -1 ? undefined : boundary).some((line) => /^@(ObjectType|InputType|InterfaceType)\b/.test(line))) return true;
  return new RegExp(`registerEnumType\\(${name},\\s*\\{\\s*name:\\s*'${name}'`).test(text);
}

function repeatedExportNames(): string[] {
  const where = new Map<string, string[]>();
  const files = new Set(workspaces.flatMap((w) => sourcesOf(join(root, w))));
  for (const file of files) {
    const rel = relative(root, file);
    if (!rel.endsWith('.ts') || rel.endsWith('.d.ts') || isTestSource(rel) || GENERATED.some((g) => rel.startsWith(g))) continue;
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(EXPORTED)) {
      const name = m[1]!;
      if (isGraphqlType(text, m.index, name)) continue;
      where.set(name, [...(where.get(name) ?? []), rel]);
    }
  }
  return [...where].filter(([, at]) => at.length > 1).map(([name, at]) => `${name}: ${at.join(', ')}`).sort();
}
