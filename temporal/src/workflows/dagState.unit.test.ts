import type { PlanNode } from '@keelson/schema';
import type { Gate } from './dagGraph';
import { DagLaunch, describeLaunch, type CarriedDagState, type DagTask } from './dagState';

const node = (id: string, extra: Partial<PlanNode> = {}): PlanNode => ({ id, type: 'command', dependsOn: [], timeoutMs: 1000, retries: 0, ...extra }) as PlanNode;
const task = (kind: DagTask['kind']) => ({ scope: { cancel: jest.fn() }, kind });
const gate = (nodeId: string, extra: Partial<Gate> = {}): Gate => ({ nodeId, pauseId: `p-${nodeId}`, opened: true, ...extra });

describe('DagLaunch', () => {
  it('starts from a hand-over: its plan, nodes, answered pauses and continuation count', () => {
    const carried: CarriedDagState = {
      plan: [node('a'), node('g', { type: 'approval' } as Partial<PlanNode>)],
      nodes: { a: { status: 'SUCCEEDED', value: 'ok' }, g: { status: 'WAITING' } },
      gates: [{ nodeId: 'g', pauseId: 'p-g' }],
      answered: [{ pauseId: 'p-0', nodeId: 'g0', answer: '7:abc' }],
      continuations: 2,
    };
    const run = new DagLaunch('r1', 3, carried);
    expect(run.planNode('g')?.type).toBe('approval');
    expect(run.nodes.get('a')).toEqual({ status: 'SUCCEEDED', value: 'ok' });
    expect(run.answered.get('p-0')?.nodeId).toBe('g0');
    expect(run.continuations).toBe(2);
    expect(run.gates.size).toBe(0);
    expect(run.version).toBe(0);
  });

  it('begins with the plan, nodes without a state pending, without bumping the version', () => {
    const run = new DagLaunch('r1', 1);
    expect(run.plan).toEqual([]);
    expect(run.nodes.size).toBe(0);
    expect(run.answered.size).toBe(0);
    run.begin([node('a'), node('b')], { a: { status: 'SUCCEEDED', value: 'x' } });
    expect(Object.fromEntries(run.nodes)).toEqual({ a: { status: 'SUCCEEDED', value: 'x' }, b: { status: 'PENDING' } });
    expect(run.version).toBe(0);
    expect(run.continuations).toBe(0);
  });

  it('bumps the version on every node change and every settled task', () => {
    const run = new DagLaunch('r1', 1);
    run.setNode('a', { status: 'RUNNING' });
    expect(run.version).toBe(1);
    run.running.set('a', task('work'));
    run.settle('a');
    expect(run.running.has('a')).toBe(false);
    expect(run.settledHere).toBe(1);
    expect(run.version).toBe(2);
  });

  it('fails once: the first failure is kept, closing becomes failing, only other gates are cancelled', () => {
    const run = new DagLaunch('r1', 1);
    const work = task('work');
    const own = task('gate');
    const other = task('gate');
    run.running.set('w', work).set('g1', own).set('g2', other);
    run.fail('g1', 'feedback', 'BAD_USER_INPUT');
    expect(run.failure).toEqual({ nodeId: 'g1', message: 'feedback', type: 'BAD_USER_INPUT' });
    expect(run.closing).toBe('failing');
    expect(other.scope.cancel).toHaveBeenCalledTimes(1);
    expect(own.scope.cancel).not.toHaveBeenCalled();
    expect(work.scope.cancel).not.toHaveBeenCalled();
    expect(run.version).toBe(1);

    run.fail('w', 'exit 1', 'UPSTREAM_FAILED');
    expect(run.failure).toEqual({ nodeId: 'g1', message: 'feedback', type: 'BAD_USER_INPUT' });
    expect(run.version).toBe(2);
  });

  it('fails a continuing launch, but does not turn a stopping, cancelling or finishing one into failing', () => {
    const continuing = new DagLaunch('r1', 1);
    continuing.closing = 'continuing';
    continuing.fail('a', 'boom', 'INTERNAL');
    expect(continuing.closing).toBe('failing');
    for (const closing of ['stopping', 'cancelling', 'finishing'] as const) {
      const run = new DagLaunch('r1', 1);
      run.closing = closing;
      run.fail('a', 'boom', 'INTERNAL');
      expect(run.closing).toBe(closing);
      expect(run.failure?.nodeId).toBe('a');
    }
  });

  it('stops at a cancel node: every running task is cancelled, the version is left to the settling tasks', () => {
    const run = new DagLaunch('r1', 1);
    const work = task('work');
    const waiting = task('gate');
    run.running.set('w', work).set('g', waiting);
    run.stopAt('c');
    expect(run.stopped).toEqual({ nodeId: 'c', reason: 'a cancel node was reached' });
    expect(run.closing).toBe('stopping');
    expect(work.scope.cancel).toHaveBeenCalledTimes(1);
    expect(waiting.scope.cancel).toHaveBeenCalledTimes(1);
    expect(run.version).toBe(0);
  });

  it('is quiet for a hand-over only while continuing with nothing but unanswered gates', () => {
    const run = new DagLaunch('r1', 1);
    run.running.set('g', task('gate'));
    run.gates.set('g', gate('g'));
    expect(run.quietForHandOver()).toBe(false);
    run.closing = 'continuing';
    expect(run.quietForHandOver()).toBe(true);
    run.gates.set('g', gate('g', { answer: 'approve' }));
    expect(run.quietForHandOver()).toBe(false);
    run.gates.set('g', gate('g', { recorded: { text: 'approve', outcome: 'SUCCEEDED' } }));
    expect(run.quietForHandOver()).toBe(false);
    run.gates.set('g', gate('g')).set('h', gate('h', { answer: 'no' }));
    expect(run.quietForHandOver()).toBe(false);
    run.gates.delete('h');
    run.gates.set('g', gate('g'));
    run.running.set('w', task('work'));
    expect(run.quietForHandOver()).toBe(false);
  });

  it('hands over its plan, nodes, open gates and answered pauses, counting one more continuation', () => {
    const run = new DagLaunch('r1', 1, { plan: [node('g')], nodes: { g: { status: 'WAITING' } }, gates: [], answered: [], continuations: 1 });
    run.gates.set('g', gate('g', { opened: true }));
    run.answered.set('p-0', { pauseId: 'p-0', nodeId: 'g0', answer: '7:abc' });
    expect(run.handOver()).toEqual({
      plan: [node('g')],
      nodes: { g: { status: 'WAITING' } },
      gates: [{ nodeId: 'g', pauseId: 'p-g' }],
      answered: [{ pauseId: 'p-0', nodeId: 'g0', answer: '7:abc' }],
      continuations: 2,
    });
  });

  it('reports its status: node statuses, open gates, and closing unless only continuing', () => {
    const run = new DagLaunch('r1', 2);
    run.begin([node('a'), node('g')], { a: { status: 'SUCCEEDED', value: 'x' }, g: { status: 'WAITING' } });
    run.gates.set('g', gate('g'));
    expect(run.status()).toEqual({ runId: 'r1', launch: 2, nodes: { a: 'SUCCEEDED', g: 'WAITING' }, openGates: [{ nodeId: 'g', pauseId: 'p-g' }], closing: false });
    run.closing = 'continuing';
    expect(run.status().closing).toBe(false);
    run.closing = 'failing';
    expect(run.status().closing).toBe(true);
  });

  it('shows the respond validator its current plan, gates, answers and closing', () => {
    const run = new DagLaunch('r1', 1);
    run.begin([node('g')], {});
    run.closing = 'stopping';
    const view = run.respondView(true);
    expect(view).toMatchObject({ runId: 'r1', closing: 'stopping', cancelled: true });
    expect(view.plan).toBe(run.plan);
    expect(view.nodes).toBe(run.nodes);
    expect(view.gates).toBe(run.gates);
    expect(view.answered).toBe(run.answered);
  });
});

describe('describeLaunch', () => {
  it('tells a quiet launch: nodes done of all, nothing running, no gate, failure or closing', () => {
    const run = new DagLaunch('r1', 2);
    run.begin([node('a'), node('b')], {});
    expect(describeLaunch(run)).toBe('**Run** `r1`, launch 2: 0 of 2 nodes done\n\n- running: nothing');
  });

  it('counts succeeded and skipped nodes done, lists work running by type and gates with their escaped question', () => {
    const run = new DagLaunch('r1', 3);
    const plan = [node('a'), node('s'), node('f'), node('w', { type: 'prompt' } as Partial<PlanNode>), node('g', { type: 'approval' } as Partial<PlanNode>), node('h', { type: 'approval' } as Partial<PlanNode>)];
    run.begin(plan, { a: { status: 'SUCCEEDED', value: 'x' }, s: { status: 'SKIPPED' }, f: { status: 'FAILED' }, w: { status: 'RUNNING' }, g: { status: 'WAITING' }, h: { status: 'WAITING' } });
    run.running.set('w', task('work')).set('x', task('work')).set('g', task('gate'));
    run.gates.set('g', gate('g', { question: 'ship *it* to `main`_[now]<b>\\?' })).set('h', gate('h'));
    expect(describeLaunch(run)).toBe(
      [
        '**Run** `r1`, launch 3: 2 of 6 nodes done\n',
        '- running: `w` (prompt), `x` (node)',
        '- waiting for an answer at: `g` (pause `p-g`) — “ship \\*it\\* to \\`main\\`\\_\\[now\\]\\<b\\>\\\\?”, `h` (pause `p-h`) (respondToRun)',
      ].join('\n'),
    );
  });

  it('tells where a launch failed (the message cut at 300 characters), where it stopped, and how it closes', () => {
    const run = new DagLaunch('r1', 1);
    run.begin([node('a')], {});
    run.failure = { nodeId: 'a', message: `${'m'.repeat(300)}TAIL`, type: 'INTERNAL' };
    run.stopped = { nodeId: 'c', reason: 'a cancel node was reached' };
    run.closing = 'failing';
    expect(describeLaunch(run).split('\n').slice(2)).toEqual([
      '- running: nothing',
      `- failed at \`a\`: ${'m'.repeat(300)}`,
      '- stopped at `c`: a cancel node was reached',
      '- closing: failing',
    ]);
  });
});
