// Bundles GraphiQL for the gateway's root page into ./dist with esbuild, offline: app.js (+ its CSS
// and fonts) and Monaco's three workers. Run by `npm ci` (the root postinstall), by
// `npm run build:graphiql`, and by the gateway itself when ./dist is missing.
const fs = require('node:fs');
const path = require('node:path');

const root = __dirname;
const dist = path.join(root, 'dist');
/** Written last: its presence says the bundle is whole. */
const manifestFile = path.join(dist, 'manifest.json');

async function buildGraphiQL({ quiet = false, replace = true } = {}) {
  const esbuild = require('esbuild');
  const started = Date.now();
  const staging = `${dist}.${process.pid}.tmp`;
  fs.rmSync(staging, { recursive: true, force: true });
  const common = {
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['es2022'],
    platform: 'browser',
    legalComments: 'linked',
    logLevel: quiet ? 'error' : 'warning',
    define: { 'process.env.NODE_ENV': '"production"' },
    absWorkingDir: root,
  };
  await esbuild.build({
    ...common,
    entryPoints: { app: path.join(root, 'src/app.tsx') },
    outdir: staging,
    jsx: 'automatic',
    // Fonts travel as files next to app.css (font-src 'self'), never inline.
    loader: { '.ttf': 'file', '.woff': 'file', '.woff2': 'file' },
    assetNames: '[name]-[hash]',
    splitting: false,
  });
  await esbuild.build({
    ...common,
    entryPoints: {
      'editor.worker': require.resolve('monaco-editor/esm/vs/editor/editor.worker.js'),
      'json.worker': require.resolve('monaco-editor/esm/vs/language/json/json.worker.js'),
      'graphql.worker': require.resolve('monaco-graphql/esm/graphql.worker.js'),
    },
    outdir: staging,
  });
  const files = fs.readdirSync(staging).filter((name) => fs.statSync(path.join(staging, name)).isFile());
  fs.writeFileSync(path.join(staging, 'manifest.json'), JSON.stringify({ builtAt: new Date().toISOString(), files }, null, 2));
  if (!replace && fs.existsSync(manifestFile)) {
    // Another process (a parallel gateway) bundled it meanwhile: keep that one whole.
    fs.rmSync(staging, { recursive: true, force: true });
    return dist;
  }
  fs.rmSync(dist, { recursive: true, force: true });
  fs.renameSync(staging, dist);
  if (!quiet) console.log(`[keelson] GraphiQL bundled into ${path.relative(process.cwd(), dist) || dist} in ${Date.now() - started} ms (${files.length} files)`);
  return dist;
}

module.exports = { buildGraphiQL, dist, manifestFile };

if (require.main === module) {
  buildGraphiQL().catch((err) => {
    console.error('[keelson] GraphiQL bundle failed:', err);
    process.exit(1);
  });
}
