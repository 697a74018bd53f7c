// npm run schema:compose — writes schema/subgraphs/<name>.graphql and schema/supergraph.graphql.
// npm run schema:check   — exits 1 when either differs from what the code produces.
import 'reflect-metadata';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { composeSupergraph } from '../src/compose';
import { schemaFiles } from './schemaFiles';

async function main(): Promise<void> {
  const check = process.argv.includes('--check');
  const composition = await composeSupergraph();
  const files = schemaFiles(composition);
  const stale: string[] = [];
  for (const [rel, content] of Object.entries(files)) {
    const path = join(__dirname, '..', '..', 'schema', rel);
    const current = await readFile(path, 'utf8').catch(() => undefined);
    if (current === content) continue;
    if (check) stale.push(rel);
    else {
      await writeFile(path, content);
      console.log(`wrote schema/${rel}`);
    }
  }
  if (check && stale.length) {
    console.error(`schema drift: ${stale.map((s) => `schema/${s}`).join(', ')} differ from the code; run npm run schema:compose`);
    process.exit(1);
  }
  if (check) console.log('schema/ matches the code');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
