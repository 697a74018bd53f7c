import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { composeSupergraph } from './compose';
import { subgraphs } from './subgraphs';
import { schemaFiles } from '../scripts/schemaFiles';

describe('the checked-in contract', () => {
  // One composition read by both specs (it builds every subgraph's schema: the bulk of this file's time).
  let composed: ReturnType<typeof composeSupergraph> | undefined;
  const composition = () => (composed ??= composeSupergraph());

  it('matches what the subgraphs\' code produces (run `npm run schema:compose` after a schema change)', async () => {
    const files = schemaFiles(await composition());
    for (const [rel, expected] of Object.entries(files)) {
      const actual = readFileSync(join(__dirname, '..', '..', 'schema', rel), 'utf8');
      expect({ file: rel, content: actual }).toEqual({ file: rel, content: expected });
    }
  });

  it('composes every subgraph with its default URL into the supergraph', async () => {
    const { supergraph } = await composition();
    expect(supergraph).toMatch(/join__Graph[\s\S]*PROJECTS @join__graph\(name: "projects", url: "http:\/\/127\.0\.0\.1:4001\/graphql"\)/);
    for (const s of subgraphs) {
      expect(supergraph).toContain(`${s.name.toUpperCase()} @join__graph(name: "${s.name}", url: "http://127.0.0.1:${s.defaultPort}/graphql")`);
    }
  });
});
