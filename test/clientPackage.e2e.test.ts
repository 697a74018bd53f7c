import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { chromium, type Browser } from 'playwright-core';
import { gqlData, subscribe } from './support/client';
import { startTestMesh, type TestMesh } from './support/mesh';
import { startTcpProxy, type TcpProxy } from './support/tcpProxy';
import type { ScenarioResult } from './fixtures/clientPackage/scenario';

// @keelson/client as a user gets it: `npm pack` (prepack builds dist/), the tarball installed into
// scratch apps outside the repository, each app type-checked under the strictest flags a consumer
// sets, then run against a live gateway behind a TCP proxy that cuts its socket mid-stream — as Node
// ESM, as Node CommonJS, and bundled by esbuild into a page of headless Chromium.

const run = promisify(execFile);
const root = join(__dirname, '..');
const fixtures = join(__dirname, 'fixtures', 'clientPackage');
const CHROMIUM = process.env.KEELSON_TEST_CHROMIUM ?? '/usr/bin/chromium';
/** The repo's own versions of what the apps install beside the tarball (so npm finds them in its cache). */
const version = (pkg: string) => (JSON.parse(readFileSync(join(root, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version;
/** npm and node without the npm_* variables of the run that started jest (a workspace flag would follow them). */
const cleanEnv = (extra: NodeJS.ProcessEnv = {}) => ({ ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k))), ...extra });

/**
 * The flags the issue names, on every app. The browser app checks the shipped .d.ts themselves too
 * (`skipLibCheck: false`); the Node apps skip that only for @types/node's sake (time), and still fail
 * on any name the package's declarations do not give them.
 */
const strict = { target: 'ES2022', strict: true, isolatedModules: true, verbatimModuleSyntax: true, erasableSyntaxOnly: true, skipLibCheck: true };
const apps = {
  esm: { type: 'module', files: ['node.ts', 'scenario.ts', 'types.ts'], compilerOptions: { ...strict, module: 'nodenext', moduleResolution: 'nodenext', types: ['node'], outDir: 'out' } },
  // CommonJS output from TypeScript's import syntax: verbatimModuleSyntax forbids exactly that, so off here.
  cjs: { type: 'commonjs', files: ['node.ts', 'scenario.ts', 'types.ts'], compilerOptions: { ...strict, verbatimModuleSyntax: false, module: 'nodenext', moduleResolution: 'nodenext', types: ['node'], outDir: 'out' } },
  browser: { type: 'module', files: ['browser.ts', 'scenario.ts', 'types.ts'], compilerOptions: { ...strict, skipLibCheck: false, module: 'preserve', moduleResolution: 'bundler', lib: ['ES2022', 'DOM'], types: [], noEmit: true } },
} as const;

/** The `// README: …` blocks of the fixtures, trimmed. */
function fixtureBlocks(): string[] {
  const text = ['scenario.ts', 'node.ts', 'browser.ts'].map((f) => readFileSync(join(fixtures, f), 'utf8')).join('\n');
  return [...text.matchAll(/^ *\/\/ README: [^\n]*\n([\s\S]*?)^ *\/\/ README end$/gm)].map((m) => dedent(m[1]!));
}
const dedent = (block: string) => {
  const lines = block.replace(/\n+$/, '').split('\n');
  const indent = Math.min(...lines.filter((l) => l.trim()).map((l) => l.match(/^ */)![0].length));
  return lines.map((l) => l.slice(indent)).join('\n');
};

describe('@keelson/client, packed and installed into apps outside the repository', () => {
  let dir: string;
  let appDir: string;
  let packed: { filename: string; files: { path: string }[] };
  let mesh: TestMesh;
  let proxy: TcpProxy;
  let site: Server;
  let siteUrl: string;
  let browser: Browser | undefined;

  /** What the apps ask for: the socket cut while two projects are made, or while one is on its way. */
  async function act(action: string, name: string): Promise<void> {
    const create = (suffix: string) => gqlData(mesh.gatewayUrl, 'mutation ($n: String!) { createProject(input: { name: $n }) { id } }', { n: `${name}-${suffix}` });
    if (action === 'drop') {
      proxy.hang(); // the reconnect waits at the proxy until both exist
      expect(proxy.drop()).toBeGreaterThan(0);
      await create('c');
      await create('d');
      proxy.resume();
    } else if (action === 'race') {
      const racing = create('e');
      expect(proxy.drop()).toBeGreaterThan(0);
      await racing;
      await create('f');
    } else throw new Error(`unknown action ${action}`);
  }

  /** The apps' own server: the browser app's page, and what the apps ask the test to do. */
  async function startSite(): Promise<void> {
    site = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://site');
      if (req.method === 'GET') {
        const js = url.pathname === '/app.js';
        res.writeHead(200, { 'content-type': js ? 'text/javascript' : 'text/html' });
        res.end(js ? readFileSync(join(appDir, 'browser', 'out', 'app.js')) : '<!doctype html><script type="module" src="/app.js"></script>');
        return;
      }
      act(url.pathname.slice(1), url.searchParams.get('name') ?? '').then(
        () => res.end('ok'),
        (err: unknown) => res.writeHead(500).end(String(err)),
      );
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    const address = site.address();
    siteUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  }

  /** `npm pack` (its prepack builds dist/), then the tarball installed into a scratch folder holding the three apps. */
  async function packAndInstall(): Promise<void> {
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: join(root, 'client'), env: cleanEnv(), maxBuffer: 16 << 20 });
    packed = (JSON.parse(stdout.slice(stdout.indexOf('['))) as (typeof packed)[])[0]!;
    writeFileSync(join(appDir, 'package.json'), JSON.stringify({ name: 'scratch-keelson-app', private: true }));
    const deps = ['graphql', 'graphql-ws', 'ws', '@types/ws', '@types/node'].map((p) => `${p}@${version(p)}`);
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', join(dir, packed.filename), ...deps], { cwd: appDir, env: cleanEnv() });
    for (const [name, app] of Object.entries(apps)) {
      mkdirSync(join(appDir, name));
      writeFileSync(join(appDir, name, 'package.json'), JSON.stringify({ type: app.type }));
      writeFileSync(join(appDir, name, 'tsconfig.json'), JSON.stringify({ compilerOptions: app.compilerOptions, files: app.files }));
      for (const file of app.files) copyFileSync(join(fixtures, file), join(appDir, name, file));
    }
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'keelson-client-package-'));
    appDir = join(dir, 'app');
    mkdirSync(appDir);
    await startSite();
    // The page's origin is another than the gateway's: allowed, as a deployment allows its frontend's.
    // Booted while the package is packed and installed (both settle before afterAll may tear down).
    const settled = await Promise.allSettled([startTestMesh({ KEELSON_ALLOWED_ORIGINS: siteUrl }).then((m) => (mesh = m)), packAndInstall()]);
    for (const result of settled) if (result.status === 'rejected') throw result.reason;
    proxy = await startTcpProxy(Number(new URL(mesh.gatewayUrl).port));
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    site?.close();
    await proxy?.close();
    await mesh?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** The result an app reported, checked against the stream the gateway serves with no socket cut. */
  async function expectScenario(result: ScenarioResult, name: string, wsBefore: number): Promise<void> {
    expect(result.created.isGitRepo).toBe(true);
    expect(result.projects).toContain(`${name}-a`);
    expect(result.refused).toBe('BAD_USER_INPUT');
    const own = result.events.filter((e) => e.name?.startsWith(`${name}-`));
    expect(own.map((e) => e.name)).toEqual(['a', 'b', 'c', 'd', 'e', 'f'].map((s) => `${name}-${s}`));
    // Every event of the stream, once and in order: the same cursors as a fresh, uncut subscription's.
    const truth = subscribe<{ projectEvents: { cursor: string } }>(mesh.gatewayWsUrl, 'subscription { projectEvents { cursor } }');
    const expected = (await truth.take(result.events.length)).map((r) => r.data!.projectEvents.cursor);
    await truth.close();
    expect(result.events.map((e) => e.cursor)).toEqual(expected);
    // Its sockets: the first subscription's, the resumed one's, and one after each cut.
    const upgrades = proxy.connections.filter((c) => c.head.startsWith('GET ')).length - wsBefore;
    expect(upgrades).toBe(4);
  }

  /** Runs a compiled Node app to its end; its result line. */
  async function runNodeApp(app: 'esm' | 'cjs', name: string): Promise<ScenarioResult> {
    const env = cleanEnv({
      KEELSON_URL: `http://127.0.0.1:${proxy.port}/graphql`,
      KEELSON_TOKEN: mesh.adminToken!.token,
      KEELSON_TEST_CONTROL: siteUrl,
      KEELSON_TEST_NAME: name,
    });
    const { stdout } = await run(process.execPath, [join(appDir, app, 'out', 'node.js')], { cwd: join(appDir, app), env, timeout: 90_000 });
    const line = stdout.split('\n').find((l) => l.startsWith('RESULT '));
    if (!line) throw new Error(`no result from the ${app} app:\n${stdout}`);
    return JSON.parse(line.slice('RESULT '.length)) as ScenarioResult;
  }

  const tsc = (app: string) => run(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(appDir, app)], { cwd: join(appDir, app) });

  it('packs built ESM, CommonJS and declarations with an exports map, and no source', () => {
    const files = packed.files.map((f) => f.path).sort();
    expect(files).toEqual(expect.arrayContaining(['README.md', 'package.json', 'dist/esm/index.js', 'dist/esm/index.d.ts', 'dist/cjs/index.js', 'dist/cjs/index.d.ts']));
    expect(files.filter((f) => f.startsWith('src/') || f.endsWith('.test.ts'))).toEqual([]);
    const manifest = JSON.parse(readFileSync(join(appDir, 'node_modules', '@keelson', 'client', 'package.json'), 'utf8'));
    expect(manifest).toMatchObject({ license: 'Apache-2.0', sideEffects: false, peerDependencies: { graphql: expect.any(String), 'graphql-ws': expect.any(String) } });
    expect(manifest.private).toBeUndefined();
    expect(manifest.dependencies).not.toHaveProperty('graphql');
    expect(manifest.exports['.'].import.default).toBe('./dist/esm/index.js');
    expect(manifest.exports['.'].require.default).toBe('./dist/cjs/index.js');
  });

  it('shows in its README exactly the code the apps below run', () => {
    const readme = readFileSync(join(root, 'client', 'README.md'), 'utf8');
    const shown = [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!.replace(/\n+$/, ''));
    expect(shown.length).toBeGreaterThanOrEqual(5);
    expect(shown.sort()).toEqual(fixtureBlocks().sort());
  });

  it('type-checks an app under isolatedModules, verbatimModuleSyntax and erasableSyntaxOnly (nodenext and bundler resolution)', async () => {
    // A failure rejects with tsc's diagnostics; types.ts's @ts-expect-error lines fail it if the types were `any`.
    await Promise.all([tsc('esm'), tsc('browser'), tsc('cjs')]);
    expect(readFileSync(join(appDir, 'esm', 'out', 'node.js'), 'utf8')).toMatch(/^import \{ createKeelsonClient \} from '@keelson\/client';$/m);
    expect(readFileSync(join(appDir, 'cjs', 'out', 'node.js'), 'utf8')).toMatch(/require\("@keelson\/client"\)/);
  }, 120_000);

  it('runs in Node as ESM: a typed query, mutations, a subscription resumed across cut sockets', async () => {
    const before = proxy.connections.filter((c) => c.head.startsWith('GET ')).length;
    await expectScenario(await runNodeApp('esm', 'esm-app'), 'esm-app', before);
  }, 90_000);

  it('runs in Node as CommonJS, the same', async () => {
    const before = proxy.connections.filter((c) => c.head.startsWith('GET ')).length;
    await expectScenario(await runNodeApp('cjs', 'cjs-app'), 'cjs-app', before);
  }, 90_000);

  it('runs bundled by esbuild in headless Chromium (nothing of Node in the bundle), the same', async () => {
    const outfile = join(appDir, 'browser', 'out', 'app.js');
    const { metafile } = await build({
      absWorkingDir: join(appDir, 'browser'),
      entryPoints: ['browser.ts'],
      bundle: true,
      format: 'esm',
      platform: 'browser',
      outfile,
      metafile: true,
      define: { GATEWAY_URL: JSON.stringify(`http://127.0.0.1:${proxy.port}/graphql`) },
      logLevel: 'silent',
    });
    const inputs = Object.keys(metafile.inputs);
    expect(inputs).toContain('../node_modules/@keelson/client/dist/esm/index.js');
    expect(inputs.filter((i) => /^node:|node_modules\/(ws|@types)\//.test(i))).toEqual([]);

    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    page.on('console', (msg) => msg.type() === 'error' && errors.push(msg.text()));
    await page.addInitScript((token) => sessionStorage.setItem('keelson-token', token), mesh.adminToken!.token);
    await page.goto(`${siteUrl}/`);
    await page.waitForFunction(() => typeof (window as unknown as { runScenario?: unknown }).runScenario === 'function');

    const before = proxy.connections.filter((c) => c.head.startsWith('GET ')).length;
    const result = await page
      .evaluate((name) => (window as unknown as { runScenario(n: string): Promise<ScenarioResult> }).runScenario(name), 'web-app')
      .catch((err: Error) => Promise.reject(new Error(`${err.message}\npage errors: ${errors.join('\n')}`)));
    await expectScenario(result, 'web-app', before);
    expect(errors).toEqual([]);
  }, 90_000);
});
