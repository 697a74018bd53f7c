import { runLimits, type PlanNode } from '@keelson/schema';
import { ANSWERED_KEPT, fingerprint, gateOutcome, nextStep, remember, respondRefusal, type Answered, type Gate, type NodeState, type RespondView } from './dagGraph';

const node = (id: string, extra: Partial<PlanNode> = {}): PlanNode => ({ id, type: 'command', dependsOn: [], timeoutMs: 1000, retries: 0, ...extra }) as PlanNode;
const states = (entries: Record<string, NodeState['status'] | NodeState>) =>
  new Map(Object.entries(entries).map(([id, s]) => [id, typeof s === 'string' ? { status: s } : s]));

describe('nextStep', () => {
  it('waits for a node that is not pending or whose dependencies have not succeeded', () => {
    expect(nextStep(node('b', { dependsOn: ['a'] }), states({ a: 'RUNNING', b: 'PENDING' }))).toEqual({ kind: 'wait' });
    expect(nextStep(node('b', { dependsOn: ['a'] }), states({ a: 'FAILED', b: 'PENDING' }))).toEqual({ kind: 'wait' });
    expect(nextStep(node('a'), states({ a: 'SUCCEEDED' }))).toEqual({ kind: 'wait' });
  });

  it('starts work and gates, stops at a cancel node', () => {
    expect(nextStep(node('b', { dependsOn: ['a'] }), states({ a: 'SUCCEEDED', b: 'PENDING' }))).toEqual({ kind: 'start', task: 'work' });
    expect(nextStep(node('g', { type: 'approval' } as Partial<PlanNode>), states({ g: 'PENDING' }))).toEqual({ kind: 'start', task: 'gate' });
    expect(nextStep(node('c', { type: 'cancel' } as Partial<PlanNode>), states({ c: 'PENDING' }))).toEqual({ kind: 'stop' });
  });

  it('skips after a skipped dependency, and when its condition does not hold', () => {
    expect(nextStep(node('b', { dependsOn: ['a'] }), states({ a: 'SKIPPED', b: 'PENDING' }))).toEqual({ kind: 'skip', reason: 'its dependency "a" was skipped' });
    const when = { node: 'a', equals: 'yes' } as PlanNode['when'];
    const b = node('b', { dependsOn: ['a'], when });
    expect(nextStep(b, states({ a: { status: 'SUCCEEDED', value: 'no' }, b: 'PENDING' }))).toEqual({ kind: 'skip', reason: 'its condition on "a" does not hold' });
    expect(nextStep(b, states({ a: { status: 'SUCCEEDED', value: 'yes' }, b: 'PENDING' }))).toEqual({ kind: 'start', task: 'work' });
  });
});

describe('nextStep without a recorded state', () => {
  it('waits for a node without a state, and for a dependency without one', () => {
    expect(nextStep(node('a'), states({}))).toEqual({ kind: 'wait' });
    expect(nextStep(node('b', { dependsOn: ['a'] }), states({ b: 'PENDING' }))).toEqual({ kind: 'wait' });
  });

  it('judges a condition on a node without a state as on an empty value', () => {
    const b = (when: PlanNode['when']) => node('b', { when });
    expect(nextStep(b({ node: 'x', notEquals: 'yes' } as PlanNode['when']), states({ b: 'PENDING' }))).toEqual({ kind: 'start', task: 'work' });
    expect(nextStep(b({ node: 'x', equals: 'yes' } as PlanNode['when']), states({ b: 'PENDING' }))).toEqual({ kind: 'skip', reason: 'its condition on "x" does not hold' });
  });
});

describe('gate answers', () => {
  it('fails a gate on feedback unless the node continues on it', () => {
    expect(gateOutcome(node('g'), 'approved', 'approve')).toEqual({ outcome: 'SUCCEEDED' });
    expect(gateOutcome(node('g'), 'feedback', 'not yet')).toEqual({ outcome: 'FAILED', error: 'the gate was answered with feedback: not yet' });
    expect(gateOutcome(node('g', { onFeedback: 'continue' } as Partial<PlanNode>), 'feedback', 'not yet')).toEqual({ outcome: 'SUCCEEDED' });
    expect(gateOutcome(node('g'), 'feedback', `${'f'.repeat(300)}TAIL`).error).toBe(`the gate was answered with feedback: ${'f'.repeat(300)}`);
  });

  it('tells texts apart by length and hash, and remembers a bounded number of answers', () => {
    expect(fingerprint('approve')).toBe(fingerprint('approve'));
    expect(fingerprint('approve')).not.toBe(fingerprint('approvf'));
    expect(fingerprint('')).toBe('0:811c9dc5');
    const answered = new Map<string, Answered>();
    for (let i = 0; i <= ANSWERED_KEPT; i++) remember(answered, { pauseId: `p${i}`, nodeId: 'g', answer: fingerprint('x') });
    expect(answered.size).toBe(ANSWERED_KEPT);
    expect(answered.has('p0')).toBe(false);
    expect(answered.has(`p${ANSWERED_KEPT}`)).toBe(true);
  });

  const view = (extra: Partial<RespondView> = {}): RespondView => {
    const gate: Gate = { nodeId: 'g', pauseId: 'p1', opened: true };
    return { runId: 'r1', plan: [node('g', { type: 'approval' } as Partial<PlanNode>), node('w')], nodes: states({ g: 'WAITING', w: 'PENDING' }), gates: new Map([['g', gate]]), answered: new Map(), closing: undefined, cancelled: false, ...extra };
  };

  it('accepts an answer to an open gate and refuses malformed, stale, closed and conflicting ones', () => {
    expect(respondRefusal({ nodeId: 'g', text: 'approve' }, view())).toBeUndefined();
    expect(respondRefusal({ nodeId: 'g', text: '  ' }, view())).toMatchObject({ type: 'BAD_USER_INPUT' });
    expect(respondRefusal({ nodeId: 3, text: 'x' } as never, view())).toMatchObject({ type: 'BAD_USER_INPUT' });
    expect(respondRefusal({ nodeId: 'g', text: 'x', pauseId: 'p0' }, view())).toEqual({ type: 'CONFLICT', message: 'pauseId p0 is stale: gate "g" is open with pause p1' });
    expect(respondRefusal({ nodeId: 'w', text: 'x' }, view())).toEqual({ type: 'CONFLICT', message: 'gate "w" is not open: "w" is a command node, not an approval' });
    expect(respondRefusal({ nodeId: 'z', text: 'x' }, view())).toEqual({ type: 'CONFLICT', message: 'gate "z" is not open: the run has no node "z"' });
    expect(respondRefusal({ nodeId: 'g', text: 'x' }, view({ cancelled: true }))).toEqual({ type: 'CONFLICT', message: 'run r1 is being cancelled; its gates are closed' });
    expect(respondRefusal({ nodeId: 'g', text: 'x' }, view({ closing: 'failing' }))).toEqual({ type: 'CONFLICT', message: 'run r1 is failing; its gates are closed' });
    expect(respondRefusal({ nodeId: 'g', text: 'x' }, view({ closing: 'continuing' }))).toBeUndefined();
  });

  it('accepts the recorded answer to a pause again (a duplicate) and refuses a different one', () => {
    const answered = new Map<string, Answered>([['p0', { pauseId: 'p0', nodeId: 'g', answer: fingerprint('approve') }]]);
    expect(respondRefusal({ nodeId: 'g', text: 'approve', pauseId: 'p0' }, view({ answered }))).toBeUndefined();
    expect(respondRefusal({ nodeId: 'g', text: 'no', pauseId: 'p0' }, view({ answered }))).toMatchObject({ type: 'CONFLICT' });
  });

  it('names the expected shape for a malformed answer: a missing request, a non-string text or pauseId', () => {
    const shape = { type: 'BAD_USER_INPUT', message: 'respond takes { nodeId: string, text: string, pauseId?: string }' };
    expect(respondRefusal(undefined as never, view())).toEqual(shape);
    expect(respondRefusal({ nodeId: 'g', text: 5 } as never, view())).toEqual(shape);
    expect(respondRefusal({ nodeId: 'g', text: 'approve', pauseId: 5 } as never, view())).toEqual(shape);
    expect(respondRefusal({ nodeId: 'g', text: 'approve', pauseId: 'p1' }, view())).toBeUndefined();
  });

  it('takes an answer up to the byte limit, and refuses a longer or blank one saying why', () => {
    const max = runLimits.answerBytes;
    expect(respondRefusal({ nodeId: 'g', text: 'a'.repeat(max) }, view())).toBeUndefined();
    expect(respondRefusal({ nodeId: 'g', text: `${'a'.repeat(max - 1)}é` }, view())).toEqual({ type: 'BAD_USER_INPUT', message: `text: must be at most ${max} bytes, got ${max + 1}` });
    expect(respondRefusal({ nodeId: 'g', text: ' \n ' }, view())).toEqual({ type: 'BAD_USER_INPUT', message: 'text: must not be empty (answer "approve" or give feedback)' });
  });

  it('refuses the recorded answer of a pause sent for another gate, naming the gate that took it', () => {
    const answered = new Map<string, Answered>([['p0', { pauseId: 'p0', nodeId: 'g0', answer: fingerprint('approve') }]]);
    expect(respondRefusal({ nodeId: 'g', text: 'approve', pauseId: 'p0' }, view({ answered }))).toEqual({
      type: 'CONFLICT',
      message: 'pause p0 of gate "g0" was already answered; one decision is recorded per pause',
    });
  });

  it('closes the gates of a cancelling or stopping run, saying which', () => {
    expect(respondRefusal({ nodeId: 'g', text: 'x' }, view({ closing: 'cancelling' }))).toEqual({ type: 'CONFLICT', message: 'run r1 is being cancelled; its gates are closed' });
    expect(respondRefusal({ nodeId: 'g', text: 'x' }, view({ closing: 'stopping' }))).toEqual({ type: 'CONFLICT', message: 'run r1 is stopping; its gates are closed' });
  });

  it('tells an approval node that is not waiting by its status, pending when it has none', () => {
    const plan = [node('g', { type: 'approval' } as Partial<PlanNode>), node('later', { type: 'approval' } as Partial<PlanNode>)];
    expect(respondRefusal({ nodeId: 'g', text: 'x' }, view({ plan, gates: new Map(), nodes: states({ g: 'SUCCEEDED' }) }))).toEqual({ type: 'CONFLICT', message: 'gate "g" is not open: its status is SUCCEEDED' });
    expect(respondRefusal({ nodeId: 'later', text: 'x' }, view({ plan, gates: new Map(), nodes: states({ g: 'SUCCEEDED' }) }))).toEqual({ type: 'CONFLICT', message: 'gate "later" is not open: its status is PENDING' });
  });

  it('accepts the same answer again while it is being recorded, and refuses a different one', () => {
    const gates = new Map<string, Gate>([['g', { nodeId: 'g', pauseId: 'p1', opened: true, answer: 'approve' }]]);
    expect(respondRefusal({ nodeId: 'g', text: 'approve' }, view({ gates }))).toBeUndefined();
    expect(respondRefusal({ nodeId: 'g', text: 'no' }, view({ gates }))).toEqual({ type: 'CONFLICT', message: 'gate "g" (pause p1) already has an answer; one decision is recorded per pause' });
  });
});
