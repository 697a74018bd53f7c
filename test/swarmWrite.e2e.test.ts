import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startModelServer, type ModelServer, type ReplyContext, type ReplySpec, type Rule } from '@keelson/model-server';
import { gqlData } from './support/client';
import { modelServerEnv, startTestMesh, type TestMesh } from './support/mesh';
import { managedBusEnv, SWARM_FIELDS, waitForSwarm, type SwarmView } from './support/swarms';
import { messagesIn, selfHandle } from './support/swarmScript';
import { quietTemporalRuntime } from './support/temporalServer';

quietTemporalRuntime();
jest.setTimeout(180_000);

const START = `mutation ($input: StartSwarmInput!) { startSwarm(input: $input) { ${SWARM_FIELDS} } }`;
const call = (name: string, args: Record<string, unknown>): ReplySpec => ({ toolCall: { name, arguments: args } });
const isLead = (ctx: ReplyContext) => ctx.system.includes('You lead the swarm');

/**
 * The lead spawns a writer, asks it for hello.txt, and on the writer's commit notice either lands the
 * SHA with chat_merge (no origin) or reports the branch (with origin).
 */
function writeModeRules(merge: boolean): Rule[] {
  return [
    {
      name: 'writing lead',
      reply: (ctx) => {
        if (!isLead(ctx)) return undefined;
        if (ctx.userText.includes('The task:')) return [call('chat_spawn', { name: 'writer', role: 'writes files', writer: true }), { text: 'spawned' }];
        const joined = /(s[0-9a-f]{8}-writer) joined as @\1, a writer on branch (\S+)/.exec(ctx.userText) ?? /@(s[0-9a-f]{8}-writer), a writer on branch (\S+)/.exec(ctx.userText);
        const committed = /committed ([0-9a-f]{40}) on (\S+)/.exec(ctx.userText);
        if (committed) {
          if (!merge) return [call('chat_report', { conclusion: `the writer's commit ${committed[1]} stays on ${committed[2]}` }), { text: 'reported' }];
          return [call('chat_merge', { agent: 'writer', sha: committed[1] }), call('chat_report', { conclusion: `landed ${committed[1]}` }), { text: 'reported' }];
        }
        const writer = joined?.[1] ?? /@(s[0-9a-f]{8}-writer)/.exec(ctx.userText)?.[1];
        return writer ? [call('chat_post', { body: `@${writer} please write hello.txt` }), { text: 'asked' }] : { text: 'waiting' };
      },
    },
    {
      name: 'writer',
      reply: (ctx) => {
        const me = selfHandle(ctx);
        if (!me?.endsWith('-writer')) return undefined;
        const ask = messagesIn(ctx.userText).find((m) => m.body.includes('write hello.txt'));
        if (!ask) return { text: 'nothing to write' };
        return [call('Write', { path: 'hello.txt', content: 'hello from the writer\n' }), call('chat_reply', { messageId: ask.id, body: 'written' }), { text: 'done' }];
      },
    },
  ];
}

describe('write mode (the lead chooses writers; each gets a worktree lease and a branch)', () => {
  let mesh: TestMesh;
  let model: ModelServer;
  let url: string;
  const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: mesh.rawEnv, encoding: 'utf8' }).trim();

  // A stand-in for the forge's CLI (`gh pr create --draft …`): records its argv, prints a URL.
  const forge = mkdtempSync(join(tmpdir(), 'keelson-forge-'));
  const forgeLog = join(forge, 'calls.jsonl');
  const forgeCli = join(forge, 'pr.js');
  writeFileSync(forgeCli, `require('node:fs').appendFileSync(${JSON.stringify(forgeLog)}, JSON.stringify(process.argv.slice(2)) + '\\n');\nconsole.log('Creating draft pull request');\nconsole.log('https://forge.example/acme/repo/pull/7');\n`);

  beforeAll(async () => {
    model = await startModelServer({ rules: writeModeRules(true) });
    mesh = await startTestMesh({
      ...modelServerEnv(model),
      ...(await managedBusEnv()),
      // Only the project named "published" opted in to pushing; its drafts open through the stand-in.
      KEELSON_SWARM_PUBLISH_PROJECTS: 'published',
      KEELSON_SWARM_PR_COMMAND: JSON.stringify([process.execPath, forgeCli, 'pr', 'create', '--draft', '--head', '{branch}', '--base', '{base}', '--title', '{title}']),
    });
    url = mesh.gatewayUrl;
  }, 120_000);
  afterAll(async () => {
    await mesh?.teardown();
    await model?.stop();
    rmSync(forge, { recursive: true, force: true });
  });

  /** A bare origin with one commit on main, and a clone of it as a project's root. */
  function originAndClone(name: string): { bare: string; root: string; upstream: string } {
    const base = join(mesh.dir, `remote-${name}`);
    const bare = join(base, 'origin.git');
    execFileSync('mkdir', ['-p', base]);
    git(base, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
    const seed = join(base, 'seed');
    git(base, 'clone', '--quiet', bare, seed);
    writeFileSync(join(seed, 'one.txt'), '1\n');
    git(seed, 'add', '.');
    git(seed, 'commit', '--quiet', '-m', 'one');
    git(seed, 'push', '--quiet', 'origin', 'main');
    const root = join(mesh.workspaceRoot, name);
    git(base, 'clone', '--quiet', bare, root);
    return { bare, root, upstream: git(seed, 'rev-parse', 'HEAD') };
  }

  it('without origin: the writer is cut from the root\'s HEAD branch, its commit lands through chat_merge, its branch goes once the base holds it; no pull request is claimed', async () => {
    const { createProject: project } = await gqlData<{ createProject: { id: string; rootPath: string } }>(url, 'mutation { createProject(input: { name: "writing" }) { id rootPath } }');
    const before = git(project.rootPath, 'rev-parse', 'HEAD');
    const { startSwarm: s } = await gqlData<{ startSwarm: SwarmView }>(url, START, { input: { task: 'Add hello.txt.', projectId: project.id, writeMode: true } });
    const done = await waitForSwarm(url, s.id, (x) => x.status !== 'RUNNING');
    expect(done).toMatchObject({ status: 'DONE', conclusion: expect.stringMatching(/^landed [0-9a-f]{40}$/) });
    const sha = done.conclusion!.split(' ')[1]!;
    expect(git(project.rootPath, 'rev-parse', 'HEAD')).toBe(sha);
    expect(git(project.rootPath, 'rev-parse', `${sha}^`)).toBe(before);
    expect(git(project.rootPath, 'log', '-1', '--format=%an')).toMatch(/^s[0-9a-f]{8}-writer$/);
    expect(existsSync(join(project.rootPath, 'hello.txt'))).toBe(true);
    const writer = done.agents.find((a) => a.id === 'writer')!;
    expect(writer).toMatchObject({ writer: true });
    expect(git(project.rootPath, 'branch', '--list', 'keelson/*')).toBe('');
    const { op } = await gqlData<{ op: { result: { write: { merges: { landed: boolean }[]; keptBranches: string[]; pullRequests: string } } } }>(url, 'query ($id: ID!) { op(id: $id) { result } }', { id: done.op.id });
    expect(op.result.write).toMatchObject({ merges: [{ agent: 'writer', sha, landed: true }], keptBranches: [], pullRequests: expect.stringMatching(/^none: no forge is configured here/) });
  });

  it('with origin (a local bare repository): the writer is cut from the fetched remote default branch, not the stale local one; its branch is kept', async () => {
    model.setRules(writeModeRules(false));
    const base = join(mesh.dir, 'remote');
    const bare = join(base, 'origin.git');
    execFileSync('mkdir', ['-p', base]);
    git(base, 'init', '--quiet', '--bare', bare);
    const seed = join(base, 'seed');
    git(base, 'clone', '--quiet', bare, seed);
    writeFileSync(join(seed, 'one.txt'), '1\n');
    git(seed, 'add', '.');
    git(seed, 'commit', '--quiet', '-m', 'one');
    git(seed, 'push', '--quiet', 'origin', 'main');
    const root = join(mesh.workspaceRoot, 'cloned');
    git(base, 'clone', '--quiet', bare, root);
    writeFileSync(join(seed, 'two.txt'), '2\n');
    git(seed, 'add', '.');
    git(seed, 'commit', '--quiet', '-m', 'two');
    git(seed, 'push', '--quiet', 'origin', 'main');
    const upstream = git(seed, 'rev-parse', 'HEAD');
    const { createProject: project } = await gqlData<{ createProject: { id: string } }>(url, 'mutation ($root: String!) { createProject(input: { name: "cloned", rootPath: $root }) { id } }', { root });
    const { startSwarm: s } = await gqlData<{ startSwarm: SwarmView }>(url, START, { input: { task: 'Add hello.txt.', projectId: project.id, writeMode: true } });
    const done = await waitForSwarm(url, s.id, (x) => x.status !== 'RUNNING');
    const m = /^the writer's commit ([0-9a-f]{40}) stays on (\S+)$/.exec(done.conclusion ?? '');
    expect({ status: done.status, conclusion: !!m }).toEqual({ status: 'DONE', conclusion: true });
    const [, sha, branch] = m!;
    expect(git(root, 'rev-parse', `${sha}^`)).toBe(upstream);
    expect(git(root, 'rev-parse', `refs/heads/${branch}`)).toBe(sha);
    expect(git(root, 'rev-parse', 'HEAD')).not.toBe(sha);
    const { op } = await gqlData<{ op: { result: { write: { base: { origin: boolean; branch: string }; keptBranches: string[]; pullRequests: string } } } }>(url, 'query ($id: ID!) { op(id: $id) { result } }', { id: done.op.id });
    expect(op.result.write).toMatchObject({ base: { origin: true, branch: 'main' }, keptBranches: [branch], pullRequests: expect.stringMatching(/^none: project cloned has not opted in to pushing/) });
  });

  it('with origin and the project opted in: the writer\'s branch is pushed and offered as a draft pull request; nothing is merged', async () => {
    model.setRules(writeModeRules(false));
    const { bare, root, upstream } = originAndClone('published');
    const { createProject: project } = await gqlData<{ createProject: { id: string } }>(url, 'mutation ($root: String!) { createProject(input: { name: "published", rootPath: $root }) { id } }', { root });
    const { startSwarm: s } = await gqlData<{ startSwarm: SwarmView }>(url, START, { input: { task: 'Add hello.txt.', projectId: project.id, writeMode: true } });
    const done = await waitForSwarm(url, s.id, (x) => x.status !== 'RUNNING');
    const m = /^the writer's commit ([0-9a-f]{40}) stays on (\S+)$/.exec(done.conclusion ?? '');
    expect({ status: done.status, conclusion: !!m }).toEqual({ status: 'DONE', conclusion: true });
    const [, sha, branch] = m!;
    // On origin under its own name; origin's main untouched.
    expect(execFileSync('git', ['--git-dir', bare, 'rev-parse', `refs/heads/${branch}`], { encoding: 'utf8' }).trim()).toBe(sha);
    expect(execFileSync('git', ['--git-dir', bare, 'rev-parse', 'refs/heads/main'], { encoding: 'utf8' }).trim()).toBe(upstream);
    // The forge's CLI was asked for a draft of that branch against main.
    const calls = readFileSync(forgeLog, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as string[]);
    expect(calls).toEqual([['pr', 'create', '--draft', '--head', branch, '--base', 'main', '--title', expect.stringMatching(/^swarm [0-9a-f]{8}: Add hello\.txt\.$/)]]);
    const { op } = await gqlData<{ op: { result: { write: { pullRequests: unknown } } } }>(url, 'query ($id: ID!) { op(id: $id) { result } }', { id: done.op.id });
    expect(op.result.write.pullRequests).toEqual({
      note: '1 branch(es) pushed, 1 draft pull request(s) opened; nothing is ever merged',
      branches: [{ branch, commits: 1, pushed: true, pullRequest: 'https://forge.example/acme/repo/pull/7', error: null }],
    });
  });
});
