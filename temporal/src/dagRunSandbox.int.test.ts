// dagRun's command nodes in the process sandbox (real bubblewrap) on a real worker and dev server;
// the rest of dagRun's specs are in dagRun.int.test.ts.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createSandbox, type ProcessSandbox } from '@keelson/platform';
import { parse } from 'yaml';
import { quietTemporalRuntime } from '../../test/support/temporalServer';
import { definitionOf, registerRun } from '../../test/support/registerRun';
import { RunHarness } from '../test/runHarness';
import { createActivities } from './activities';

quietTemporalRuntime();

describe('dagRun command nodes in the sandbox (real bubblewrap)', () => {
  let h: RunHarness;
  let server: Server;
  let url: string;
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'keelson-dag-sandbox-')));
  const project = join(base, 'project');
  const keelsonHome = join(base, 'keelson-home');
  /** Where an escaping write would land: the host's home directory (visible, read-only in the sandbox). */
  const homeEscape = join(homedir(), `keelson-node-escape-${process.pid}.txt`);
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: project, encoding: 'utf8' });

  beforeAll(async () => {
    mkdirSync(join(project, '.keelson', 'workflows'), { recursive: true });
    mkdirSync(keelsonHome);
    writeFileSync(join(keelsonHome, 'credentials.key'), 'the mesh key\n');
    git('init', '-q');
    git('commit', '-q', '--allow-empty', '-m', 'init');
    server = createServer((_req, res) => res.end('reached the host\n'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    // The worker's environment: what must not reach a command, and the mesh's home to hide.
    h = await RunHarness.start({
      env: {
        PATH: process.env.PATH,
        HOME: homedir(),
        KEELSON_HOME: keelsonHome,
        DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/keelson',
        KEELSON_CREDENTIALS_KEY: 'f'.repeat(64),
        TEMPORAL_ADDRESS: '127.0.0.1:7233',
        OPENAI_API_KEY: 'sk-oai-secret',
        DEPLOY_TOKEN: 'tok-secret',
      },
    });
  });

  afterAll(async () => {
    await h?.stop();
    await new Promise((resolve) => server?.close(resolve));
    rmSync(homeEscape, { force: true });
    rmSync(base, { recursive: true, force: true });
  });

  it('writes only the cwd and $ARTIFACTS_DIR, reaches no network and sees none of the worker’s secrets; with network: true it connects', async () => {
    const run = await h.start(
      `
name: sandboxed
nodes:
  - id: probe
    type: bash
    bash: |
      echo inside > inside.txt && echo art > "$ARTIFACTS_DIR/art.txt" && echo wrote
      (echo pwned > ${homeEscape}) 2>/dev/null || echo "home refused"
      (echo hook > .git/hooks/pre-commit) 2>/dev/null || echo ".git refused"
      (echo wf > .keelson/workflows/evil.yaml) 2>/dev/null || echo ".keelson refused"
      cat ${keelsonHome}/credentials.key 2>/dev/null || echo "home hidden"
      curl -sS --max-time 5 ${url} 2>/dev/null || echo "network refused"
      env | cut -d= -f1 | sort | tr '\\n' ' '
  - id: script
    type: script
    runtime: node
    script: |
      require('node:http').get('${url}', (res) => res.pipe(process.stdout)).on('error', (e) => console.log('script network refused: ' + e.code));
  - id: online
    type: bash
    network: true
    bash: curl -sS --max-time 5 ${url}
`,
      { cwd: project },
    );
    await expect(run.handle.result()).resolves.toMatchObject({ status: 'SUCCEEDED' });
    const out = Object.fromEntries((await h.nodes(run.runId)).map((n) => [n.node_id, n.output]));
    const [wrote, home, dotGit, dotKeelson, hidden, network, names] = out.probe!.split('\n');
    expect([wrote, home, dotGit, dotKeelson, hidden, network]).toEqual(['wrote', 'home refused', '.git refused', '.keelson refused', 'home hidden', 'network refused']);
    expect(readFileSync(join(project, 'inside.txt'), 'utf8')).toBe('inside\n');
    expect(readFileSync(join(run.artifactsDir, 'art.txt'), 'utf8')).toBe('art\n');
    expect([existsSync(homeEscape), existsSync(join(project, '.git', 'hooks', 'pre-commit')), existsSync(join(project, '.keelson', 'workflows', 'evil.yaml'))]).toEqual([false, false, false]);
    const vars = names!.trim().split(' ');
    for (const name of ['DATABASE_URL', 'KEELSON_CREDENTIALS_KEY', 'TEMPORAL_ADDRESS', 'OPENAI_API_KEY', 'DEPLOY_TOKEN', 'KEELSON_HOME']) expect([name, vars.includes(name)]).toEqual([name, false]);
    expect(vars).toEqual(expect.arrayContaining(['ARTIFACTS_DIR', 'KEELSON_RUN_ID', 'KEELSON_NODE_ID', 'PATH', 'HOME']));
    expect(out.script).toMatch(/^script network refused: E(CONNREFUSED|NETUNREACH)/);
    expect(out.online).toBe('reached the host\n');
  });

  it('commits only from a node that declares gitWrite', async () => {
    const run = await h.start(
      `
name: committer
nodes:
  - { id: change, type: bash, bash: "echo v1 > file.txt && git add file.txt 2>&1 || echo 'index refused'" }
  - { id: commit, type: bash, depends_on: [change], gitWrite: true, bash: "git add file.txt && git -c user.name=t -c user.email=t@example.com commit -q -m 'from a node' && git log --format=%s -1" }
`,
      { cwd: project },
    );
    await expect(run.handle.result()).resolves.toMatchObject({ status: 'SUCCEEDED' });
    const out = Object.fromEntries((await h.nodes(run.runId)).map((n) => [n.node_id, n.output]));
    expect(out.change).toMatch(/Read-only file system[\s\S]*index refused/);
    expect(out.commit).toBe('from a node\n');
    expect(git('log', '--format=%s', '-1')).toBe('from a node\n');
  });

  it('fails a command node for good, naming the fix, when the sandbox is unavailable; runs it unconfined only when off', async () => {
    const definition = definitionOf(parse('name: refused\nnodes:\n  - { id: cmd, type: bash, bash: "echo ran > ran.txt; echo ran" }\n'));
    const attempt = async (sandbox: ProcessSandbox) => {
      const runId = randomUUID();
      await registerRun(h.store, definition, { id: runId, cwd: project, artifactsDir: join(h.home, 'runs', runId, 'artifacts') });
      const { beginLaunch, runCommandNode } = createActivities({ ...h.opened.deps, runs: { ...h.opened.deps.runs!, sandbox } });
      await new MockActivityEnvironment().run(beginLaunch, { runId, launch: 1 });
      return new MockActivityEnvironment({ attempt: 1 }).run(runCommandNode, { runId, nodeId: 'cmd', launch: 1 });
    };
    const missing = join(base, 'no-such-bwrap');
    await expect(attempt(createSandbox({ bwrap: missing }))).rejects.toMatchObject({
      type: 'CAPABILITY_UNSUPPORTED',
      nonRetryable: true,
      message: `bash node "cmd" refused: KEELSON_SANDBOX=required and the sandbox is unavailable (${missing} not found); install bubblewrap (Debian/Ubuntu: apt-get install -y bubblewrap) or set KEELSON_SANDBOX=off to run without confinement`,
    });
    expect(existsSync(join(project, 'ran.txt'))).toBe(false);
    await expect(attempt(createSandbox({ mode: 'off', bwrap: missing }))).resolves.toMatchObject({ status: 'SUCCEEDED', value: 'ran' });
    expect(existsSync(join(project, 'ran.txt'))).toBe(true);
  });
});
