import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@keelson/service';
import type { ApprovalNotice, Policy, PolicyContext } from '@keelson/ribs-contract';
import { createApprovalQueue } from '../src/policy/approvalQueue';
import { canonicalPath } from '@keelson/platform';
import { pathConfinementPolicy } from '../src/policy/pathConfinement';
import { PolicyEngine } from '../src/policy/policyEngine';
import { createWarningSink } from '../src/warnings';
import { sleep } from './support/quietHost';

const ctx: PolicyContext = { surface: 'chat', ribId: 'demo' };
const call = { phase: 'tool_call', tool: 'demo_x', args: {} } as const;
const warn = createWarningSink(silentLogger());
const policy = (id: string, decide: Policy['evaluate'], on?: Policy['on']): Policy => ({ id, evaluate: decide, ...(on ? { on } : {}) });

describe('the policy engine', () => {
  it('evaluates builtins first, then rib policies, and the first deny wins', async () => {
    const order: string[] = [];
    const engine = new PolicyEngine(warn);
    engine.add(policy('builtin:a', () => (order.push('a'), { outcome: 'allow' })), 'builtin');
    engine.add(policy('b', () => (order.push('b'), { outcome: 'deny', reason: 'no' })), 'rib-one');
    engine.add(policy('c', () => (order.push('c'), { outcome: 'allow' })), 'rib-two');
    await expect(engine.evaluate(call, ctx)).resolves.toEqual({ outcome: 'deny', reason: 'no', policyId: 'rib-one:b' });
    expect(order).toEqual(['a', 'b']);
    expect(engine.list().map((p) => p.id)).toEqual(['builtin:a', 'rib-one:b', 'rib-two:c']);
  });

  it('consults a policy only for the phases and tools it names', async () => {
    const engine = new PolicyEngine(warn);
    engine.add(policy('only-y', () => ({ outcome: 'deny', reason: 'y' }), [{ phase: 'tool_call', tool: 'demo_y' }]), 'demo');
    await expect(engine.evaluate(call, ctx)).resolves.toEqual({ outcome: 'allow' });
    await expect(engine.evaluate({ ...call, tool: 'demo_y' }, ctx)).resolves.toMatchObject({ outcome: 'deny' });
  });

  it('fails closed on a throwing policy or a malformed decision', async () => {
    const engine = new PolicyEngine(warn);
    engine.add(policy('boom', () => {
      throw new Error('bug');
    }), 'demo');
    await expect(engine.evaluate(call, ctx)).resolves.toMatchObject({ outcome: 'deny', policyId: 'demo:boom' });
    const other = new PolicyEngine(warn);
    other.add(policy('weird', () => ({ outcome: 'maybe' }) as never), 'demo');
    await expect(other.evaluate(call, ctx)).resolves.toMatchObject({ outcome: 'deny', reason: expect.stringMatching(/malformed/) });
  });

  it('lets a policy scope itself to its own workflow node, matching nothing where the fields are absent', async () => {
    const engine = new PolicyEngine(warn);
    engine.add(policy('gate', (_e, c) => (c.workflowName === 'deploy' && c.nodeId === 'ship' ? { outcome: 'deny', reason: 'not on ship' } : { outcome: 'allow' })), 'demo');
    await expect(engine.evaluate(call, { surface: 'workflow', workflowName: 'deploy', nodeId: 'ship' })).resolves.toMatchObject({ outcome: 'deny' });
    await expect(engine.evaluate(call, { surface: 'chat' })).resolves.toEqual({ outcome: 'allow' });
  });

  it('reads an ask as deny-with-reason when no approval channel is wired', async () => {
    const engine = new PolicyEngine(warn);
    engine.add(policy('ask', () => ({ outcome: 'ask', reason: 'shell needs a human' })), 'demo');
    await expect(engine.evaluate(call, ctx)).resolves.toEqual({ outcome: 'deny', reason: 'shell needs a human (approval required; no approval channel)', policyId: 'demo:ask' });
  });

  it('coalesces asks into one pending approval, allowed on accept and denied on reject', async () => {
    const approvals = createApprovalQueue();
    const engine = new PolicyEngine(warn, approvals);
    engine.add(policy('one', () => ({ outcome: 'ask', reason: 'first' })), 'demo');
    engine.add(policy('two', () => ({ outcome: 'ask', reason: 'second' })), 'demo');

    const accepted = engine.evaluate(call, ctx);
    await sleep(1);
    expect(approvals.pending()).toEqual([expect.objectContaining({ policyId: 'demo:one', reason: 'first; second', tool: 'demo_x', ribId: 'demo', surface: 'chat' })]);
    expect(approvals.resolve(approvals.pending()[0]!.id, 'accept')).toBe(true);
    await expect(accepted).resolves.toEqual({ outcome: 'allow' });

    const rejected = engine.evaluate(call, ctx);
    await sleep(1);
    approvals.resolve(approvals.pending()[0]!.id, 'reject');
    await expect(rejected).resolves.toMatchObject({ outcome: 'deny', reason: 'first; second (not approved)' });
  });

  it('tells an observer the ask opened (its approval id) before its answer, which it waits for; a failing observer changes nothing', async () => {
    const approvals = createApprovalQueue();
    const engine = new PolicyEngine(warn, approvals);
    engine.add(policy('gate', () => ({ outcome: 'ask', reason: 'check first' })), 'demo');
    const heard: ApprovalNotice[] = [];
    const observe = async (n: ApprovalNotice) => {
      await sleep(5);
      heard.push(n);
    };
    const accepted = engine.evaluate(call, ctx, undefined, observe);
    await sleep(1);
    const id = approvals.pending()[0]!.id;
    approvals.resolve(id, 'accept');
    await expect(accepted).resolves.toEqual({ outcome: 'allow' });
    expect(heard).toEqual([
      { state: 'opened', policyId: 'demo:gate', reason: 'check first', tool: 'demo_x', approvalId: id },
      { state: 'answered', policyId: 'demo:gate', tool: 'demo_x', approvalId: id, approved: true },
    ]);

    const rejected = engine.evaluate(call, ctx, undefined, () => {
      throw new Error('observer down');
    });
    await sleep(1);
    approvals.resolve(approvals.pending()[0]!.id, 'reject');
    await expect(rejected).resolves.toMatchObject({ outcome: 'deny', reason: 'check first (not approved)' });
    // No ask, no notice.
    const quiet: ApprovalNotice[] = [];
    const none = new PolicyEngine(warn, approvals);
    none.add(policy('ok', () => ({ outcome: 'allow' })), 'demo');
    await expect(none.evaluate(call, ctx, undefined, (n) => void quiet.push(n))).resolves.toEqual({ outcome: 'allow' });
    expect(quiet).toEqual([]);
  });

  it('rejects an approval nobody answers in time, or whose caller gave up', async () => {
    const engine = new PolicyEngine(warn, createApprovalQueue({ timeoutMs: 10 }));
    engine.add(policy('ask', () => ({ outcome: 'ask', reason: 'r' })), 'demo');
    await expect(engine.evaluate(call, ctx)).resolves.toMatchObject({ outcome: 'deny' });
    const queue = createApprovalQueue();
    const controller = new AbortController();
    const waiting = queue.request({ surface: 'rib', policyId: 'p', reason: 'r' }, controller.signal);
    controller.abort();
    await expect(waiting).resolves.toBe('reject');
    expect(queue.pending()).toEqual([]);
  });

  it('never asks after the work ran: an ask on a result denies', async () => {
    const approvals = createApprovalQueue();
    const engine = new PolicyEngine(warn, approvals);
    engine.add(policy('ask', () => ({ outcome: 'ask', reason: 'review output' })), 'demo');
    await expect(engine.evaluate({ phase: 'tool_result', tool: 'demo_x', result: 'out' }, ctx)).resolves.toMatchObject({ outcome: 'deny' });
    expect(approvals.pending()).toEqual([]);
  });

  it('chains redactions: each result policy sees the text the previous one substituted', async () => {
    const engine = new PolicyEngine(warn);
    engine.add(policy('a', (e) => ({ outcome: 'allow', data: `${(e as { result: string }).result}+a` })), 'demo');
    engine.add(policy('b', (e) => ({ outcome: 'allow', data: `${(e as { result: string }).result}+b` })), 'demo');
    await expect(engine.evaluate({ phase: 'tool_result', tool: 't', result: 'x' }, ctx)).resolves.toEqual({ outcome: 'allow', data: 'x+a+b' });
  });
});

describe('builtin:path_confinement', () => {
  const root = mkdtempSync(join(tmpdir(), 'keelson-confine-'));
  const allowed = join(root, 'project');
  const outside = join(root, 'elsewhere');
  mkdirSync(allowed);
  mkdirSync(outside);
  symlinkSync(outside, join(allowed, 'escape'));
  const confine = pathConfinementPolicy();
  const decide = (args: unknown, allowedDirectories: string[] = [allowed]) =>
    confine.evaluate({ phase: 'tool_call', tool: 't', args }, { surface: 'rib', cwd: allowed, allowedDirectories });

  it('allows paths inside the allowed directories, relative ones resolved against the cwd', () => {
    expect(decide({ path: 'src/new-file.ts' })).toEqual({ outcome: 'allow' });
    expect(decide({ paths: [join(allowed, 'a'), 'b'] })).toEqual({ outcome: 'allow' });
  });

  it('denies paths that canonicalize outside, symlink escapes included', () => {
    expect(decide({ path: '../elsewhere/x' })).toMatchObject({ outcome: 'deny' });
    expect(decide({ file_path: 'escape/secret.txt' })).toMatchObject({ outcome: 'deny', reason: expect.stringMatching(/escape\/secret\.txt/) });
  });

  it('checks path-like words of shell commands', () => {
    expect(decide({ command: 'cat ./README.md | wc -l' })).toEqual({ outcome: 'allow' });
    expect(decide({ command: `cat ${outside}/x` })).toMatchObject({ outcome: 'deny' });
    expect(decide({ command: 'cp a --target=/etc' })).toMatchObject({ outcome: 'deny' });
  });

  it('follows a dangling symlink to the file a write would create, and takes .. from the resolved parent', () => {
    symlinkSync(join(outside, 'planted.txt'), join(allowed, 'dangling'));
    mkdirSync(join(outside, 'deeper'));
    symlinkSync(join(outside, 'deeper'), join(allowed, 'down'));
    expect(decide({ path: 'dangling' })).toMatchObject({ outcome: 'deny' });
    // Lexically `down/..` is the project; the kernel resolves it to `outside`.
    expect(decide({ path: 'down/../secret.txt' })).toMatchObject({ outcome: 'deny' });
    expect(canonicalPath('down/../x', allowed)).toBe(join(realpathSync(outside), 'x'));
  });

  it('fails closed on a symlink loop', () => {
    symlinkSync('loop-b', join(allowed, 'loop-a'));
    symlinkSync('loop-a', join(allowed, 'loop-b'));
    expect(decide({ path: 'loop-a/x' })).toEqual({ outcome: 'deny', reason: "path 'loop-a/x': too many levels of symbolic links resolving 'loop-a/x'" });
  });

  it('reads quoted, braced, assigned and $HOME / ~user words of a command, and lets device files through', () => {
    for (const command of [`cat "${outside}/x"`, `cat '/etc/passwd'`, 'cp a {b,/etc/x}', 'OUT=/tmp/x make', 'cat $HOME/.ssh/id_rsa', 'cat ${HOME}/x', 'ls ~root/', 'cd .. && ls', 'cat <../elsewhere/x']) {
      expect([command, decide({ command })]).toEqual([command, expect.objectContaining({ outcome: 'deny' })]);
    }
    for (const command of ['make 2>/dev/null', 'ls >/dev/stderr', 'git log --format=%h/%s', 'echo "a/b" | cut -d/ -f1', 'cat $PWD/README.md']) {
      expect([command, decide({ command })]).toEqual([command, { outcome: 'allow' }]);
    }
  });

  it('checks bare words naming a symlink and every path a wildcard matches', () => {
    mkdirSync(join(allowed, 'globbed'));
    for (let i = 0; i < 3; i++) writeFileSync(join(allowed, 'globbed', `f${i}.ts`), '');
    symlinkSync(join(outside, 'x.txt'), join(allowed, 'lure.txt'));
    expect(decide({ command: 'cat globbed/*.ts && ls glob*' })).toEqual({ outcome: 'allow' });
    for (const command of ['cat lure.txt', 'cd escape && cat x', 'cat l*e.txt', 'ls glob*/../e*/']) {
      expect([command, decide({ command })]).toEqual([command, expect.objectContaining({ outcome: 'deny' })]);
    }
    mkdirSync(join(allowed, 'crowd'));
    for (let i = 0; i < 300; i++) writeFileSync(join(allowed, 'crowd', `f${i}`), '');
    expect(decide({ command: 'cat crowd/*' })).toEqual({ outcome: 'deny', reason: "'crowd/*' matches more than 256 paths; name the files instead" });
  });

  it('leaves a turn without allowed directories unconfined', () => {
    expect(decide({ path: '/etc/passwd' }, [])).toEqual({ outcome: 'allow' });
  });
});
