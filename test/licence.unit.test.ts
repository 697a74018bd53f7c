import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..');
const manifest = (dir: string) => JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as { name: string; license?: string; workspaces?: string[] };

describe('the licence', () => {
  it('is Apache-2.0: the LICENSE text at the root, and the same `license` in every package.json', () => {
    const text = readFileSync(join(root, 'LICENSE'), 'utf8');
    expect(text).toMatch(/^\s*Apache License\s+Version 2\.0, January 2004/);
    expect(text).toContain('END OF TERMS AND CONDITIONS');
    const top = manifest('.');
    const packages = [top, ...(top.workspaces ?? []).map(manifest)];
    expect(packages.length).toBeGreaterThan(20);
    expect(packages.filter((p) => p.license !== 'Apache-2.0').map((p) => p.name)).toEqual([]);
  });
});
