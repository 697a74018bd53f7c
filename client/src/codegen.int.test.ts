import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const root = join(__dirname, '..', '..');

// In a child process: @graphql-codegen/cli loads ESM that Jest's module runtime cannot.
describe('@keelson/client typed documents', () => {
  it('are what codegen makes from the checked-in supergraph today (else: npm run client:codegen)', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['-r', './scripts/register.js', 'scripts/clientCodegen.ts', '--check'], { cwd: root });
    expect(stdout).toMatch(/client\/src\/gql is up to date \(3 files\)/);

    // Every operation of operations.graphql is a typed document.
    const generated = readFileSync(join(__dirname, 'gql', 'graphql.ts'), 'utf8');
    const operations = [...readFileSync(join(__dirname, 'operations.graphql'), 'utf8').matchAll(/^(?:query|mutation|subscription) (\w+)/gm)].map((m) => m[1]);
    expect(operations).toHaveLength(16);
    for (const name of operations) expect(generated).toMatch(new RegExp(`^export const ${name}Document = .* as unknown as DocumentNode<${name}(Query|Mutation|Subscription), `, 'm'));
  }, 90_000);

  it('fail the check when the checked-in output differs', async () => {
    const run = promisify(execFile)(process.execPath, ['-r', './scripts/register.js', 'scripts/clientCodegen.ts', '--check'], {
      cwd: root,
      env: { ...process.env, KEELSON_CLIENT_GQL_DIR: join(__dirname, 'missing-gql-dir') },
    });
    await expect(run).rejects.toMatchObject({ code: 1, stderr: expect.stringMatching(/client\/src\/gql is out of date .*run npm run client:codegen/) });
  }, 90_000);
});
