// Builds the published package into dist/ (`npm run build`, and `prepack` before `npm pack`):
// esbuild bundles src/index.ts once as ESM (dist/esm) and once as CommonJS (dist/cjs), its
// dependencies left as imports; tsc checks the source under tsconfig.build.json and writes the
// declarations beside each. A package.json in each folder names its module format, so Node and
// TypeScript read dist/esm as ESM and dist/cjs as CommonJS.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { build } from 'esbuild';
import ts from 'typescript';

const dir = __dirname;
const dist = join(dir, 'dist');
const formats = [
  { format: 'esm', type: 'module' },
  { format: 'cjs', type: 'commonjs' },
] as const;

/** An ESM declaration file's relative imports need their extension (`./client.js`); CommonJS ones take it too. */
function withJsExtension(spec: string): string {
  return spec.startsWith('.') && !/\.[cm]?js$/.test(spec) ? `${spec}.js` : spec;
}

/** A declaration transformer: every relative module specifier (import, export … from, import("…") types) gets `.js`. */
const relativeExtensions: ts.TransformerFactory<ts.SourceFile | ts.Bundle> = (context) => {
  const { factory } = context;
  const literal = (node: ts.Expression | undefined) => (node && ts.isStringLiteral(node) ? factory.createStringLiteral(withJsExtension(node.text)) : node);
  const visit = (node: ts.Node): ts.Node => {
    if (ts.isImportDeclaration(node)) {
      return factory.updateImportDeclaration(node, node.modifiers, node.importClause, literal(node.moduleSpecifier)!, node.attributes);
    }
    if (ts.isExportDeclaration(node)) {
      return factory.updateExportDeclaration(node, node.modifiers, node.isTypeOnly, node.exportClause, literal(node.moduleSpecifier), node.attributes);
    }
    if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      const argument = factory.updateLiteralTypeNode(node.argument, literal(node.argument.literal as ts.StringLiteral) as ts.StringLiteral);
      return factory.updateImportTypeNode(node, argument, node.attributes, node.qualifier, node.typeArguments, node.isTypeOf);
    }
    return ts.visitEachChild(node, visit, context);
  };
  return (file) => ts.visitNode(file, visit) as ts.SourceFile | ts.Bundle;
};

/** Type-checks the source under tsconfig.build.json and writes its declarations into each of `outDirs`; throws on any diagnostic. */
function emitDeclarations(outDirs: readonly string[]): void {
  const fail = (diagnostics: readonly ts.Diagnostic[]): never => {
    const host = { getCanonicalFileName: (f: string) => f, getCurrentDirectory: () => dir, getNewLine: () => '\n' };
    throw new Error(ts.formatDiagnostics(diagnostics, host));
  };
  const config = ts.getParsedCommandLineOfConfigFile(join(dir, 'tsconfig.build.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => fail([d]) });
  if (!config) throw new Error('tsconfig.build.json could not be read');
  const [first, ...others] = outDirs as [string, ...string[]];
  const program = ts.createProgram({ rootNames: config.fileNames, options: { ...config.options, outDir: first } });
  const diagnostics = [...config.errors, ...ts.getPreEmitDiagnostics(program)];
  if (diagnostics.length) fail(diagnostics);
  // The same declarations in every folder (each folder's package.json says how to read them).
  const writeFile: ts.WriteFileCallback = (file, text) => {
    for (const outDir of [first, ...others]) {
      const target = join(outDir, relative(first, file));
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, text);
    }
  };
  const result = program.emit(undefined, writeFile, undefined, true, { afterDeclarations: [relativeExtensions] });
  if (result.emitSkipped || result.diagnostics.length) fail(result.diagnostics);
}

async function main(): Promise<void> {
  rmSync(dist, { recursive: true, force: true });
  for (const { format, type } of formats) {
    await build({
      entryPoints: [join(dir, 'src', 'index.ts')],
      outfile: join(dist, format, 'index.js'),
      bundle: true,
      // graphql, graphql-ws and the typed-document types stay imports: the app's own copies.
      packages: 'external',
      platform: 'neutral',
      format,
      target: 'es2022',
      logLevel: 'warning',
    });
    mkdirSync(join(dist, format), { recursive: true });
    writeFileSync(join(dist, format, 'package.json'), `${JSON.stringify({ type, sideEffects: false })}\n`);
  }
  emitDeclarations(formats.map(({ format }) => join(dist, format)));
  console.log(`built ${formats.map(({ format }) => `dist/${format}`).join(' and ')}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
