import { join, relative } from 'node:path';
import ts from 'typescript';

// Seed 000's examples, copied verbatim into test/fixtures/seed000 (each file names its source lines;
// the full example's own module `./board.ts` and its free `demoRefreshWorkflow` are stubbed beside it),
// typechecked against `@keelson/shared` as a rib author would: with the compiler, strict.

const dir = join(__dirname, 'fixtures', 'seed000');

function diagnostics(files: string[], extra?: { name: string; text: string }): string[] {
  const config = ts.getParsedCommandLineOfConfigFile(join(dir, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined })!;
  const host = ts.createCompilerHost(config.options);
  if (extra) {
    const read = host.readFile.bind(host);
    const exists = host.fileExists.bind(host);
    const getSource = host.getSourceFile.bind(host);
    host.readFile = (f) => (f === extra.name ? extra.text : read(f));
    host.fileExists = (f) => f === extra.name || exists(f);
    host.getSourceFile = (f, lang, ...rest) => (f === extra.name ? ts.createSourceFile(f, extra.text, lang) : getSource(f, lang, ...rest));
  }
  const program = ts.createProgram([...files, ...(extra ? [extra.name] : [])], config.options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => `${d.file ? `${relative(dir, d.file.fileName)}: ` : ''}${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
}

describe("seed 000's examples, verbatim", () => {
  const examples = ['smallest-rib.ts', 'minimal-tool.ts', 'create-project.ts', 'full/rib.ts', 'full/board.ts', 'full/workflow.d.ts'].map((f) => join(dir, f));

  it('typecheck against @keelson/shared, strict', () => {
    expect(diagnostics(examples)).toEqual([]);
  });

  it('would fail to typecheck a rib that breaks the contract (the check is real)', () => {
    const broken = join(dir, 'broken.ts');
    const found = diagnostics([], {
      name: broken,
      text: 'import type { Rib, RibActionResponse, ListAgentsResponse } from "@keelson/shared";\nconst rib: Rib = { id: "demo", displayName: 7 };\nconst r: RibActionResponse = { ok: "yes" };\nconst a: ListAgentsResponse = { agents: [{ slug: 1 }] };\nexport default [rib, r, a];\n',
    });
    expect(found).toEqual([
      expect.stringMatching(/^broken\.ts: Type 'number' is not assignable to type 'string'/),
      expect.stringMatching(/^broken\.ts: .*not assignable/),
      expect.stringMatching(/^broken\.ts: .*not assignable/),
    ]);
  });
});
