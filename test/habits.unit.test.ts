import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { shippedSources } from './support/sourceFiles';

// The code cites the house habits by number ("CONTRIBUTING.md habit 6"): each citation must land on a
// habit CONTRIBUTING.md has, and none may send a maintainer to a file the repository does not hold.

const root = join(__dirname, '..');
const contributing = readFileSync(join(root, 'CONTRIBUTING.md'), 'utf8');
const habits = new Set([...contributing.matchAll(/^(\d+)\. \*\*/gm)].map((m) => Number(m[1])));
const cited = [...shippedSources(root), 'eslint.config.js', 'bench/README.md'].map((file) => ({ file, text: readFileSync(join(root, file), 'utf8') }));

describe('the house habits', () => {
  it('are numbered 1 to 10 in CONTRIBUTING.md', () => {
    expect([...habits]).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('are what every citation in the tree names, and no citation points at STYLE.md', () => {
    const citations = cited.flatMap(({ file, text }) => [...text.matchAll(/\bhabit (\d+)\b/g)].map((m) => ({ file, habit: Number(m[1]) })));
    expect(citations.length).toBeGreaterThan(0);
    expect(citations.filter((c) => !habits.has(c.habit))).toEqual([]);
    expect(cited.filter(({ text }) => text.includes('STYLE.md')).map((c) => c.file)).toEqual([]);
  });
});
