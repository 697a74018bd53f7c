// Writes client/src/gql/ (typed documents of client/src/operations.graphql) from the checked-in
// supergraph's API schema with @graphql-codegen's client preset; `--check` writes nothing and fails
// when the checked-in output differs (as schema:check does for schema/).
import { existsSync, readFileSync, readdirSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Supergraph } from '@apollo/federation-internals';
import { generate } from '@graphql-codegen/cli';
import { supergraphForPlanning } from '@keelson/gateway';
import { printSchema } from 'graphql';

const clientDir = join(__dirname, '..', 'client');
/** KEELSON_CLIENT_GQL_DIR: where --check looks instead (the drift test points it at a stale copy). */
const outDir = process.env.KEELSON_CLIENT_GQL_DIR ?? join(clientDir, 'src', 'gql');
const supergraphFile = join(clientDir, '..', 'schema', 'supergraph.graphql');

/** The files codegen makes, by path relative to client/src/gql. */
export async function generateClient(): Promise<Map<string, string>> {
  // Clients see the API schema: no join__/link__ machinery, nothing @inaccessible.
  const api = printSchema(Supergraph.build(supergraphForPlanning(readFileSync(supergraphFile, 'utf8'))).apiSchema().toGraphQLJSSchema());
  const outputs = await generate(
    {
      schema: api,
      documents: [join(clientDir, 'src', 'operations.graphql')],
      silent: true,
      generates: {
        [`${outDir}/`]: {
          preset: 'client',
          presetConfig: { fragmentMasking: false },
          config: { useTypeImports: true, enumsAsTypes: true, scalars: { DateTime: 'string', JSON: 'unknown' } },
        },
      },
    },
    false,
  );
  return new Map(outputs.map((o: { filename: string; content: string }) => [relative(outDir, o.filename), o.content]));
}

async function main(): Promise<void> {
  const check = process.argv.includes('--check');
  const files = await generateClient();
  if (check) {
    const present = existsSync(outDir) ? readdirSync(outDir).sort() : [];
    const drift = [...files].filter(([name, content]) => {
      try {
        return readFileSync(join(outDir, name), 'utf8') !== content;
      } catch {
        return true;
      }
    });
    const extra = present.filter((name) => !files.has(name));
    if (drift.length || extra.length) {
      console.error(`client/src/gql is out of date (${[...drift.map(([n]) => n), ...extra].join(', ')}): run npm run client:codegen and commit it`);
      process.exit(1);
    }
    console.log(`client/src/gql is up to date (${files.size} files)`);
    return;
  }
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  for (const [name, content] of files) writeFileSync(join(outDir, name), content);
  console.log(`wrote ${files.size} files to ${relative(process.cwd(), outDir)}`);
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
