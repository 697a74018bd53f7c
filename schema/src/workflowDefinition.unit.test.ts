import { conditionHolds, isApproval, parseDuration, parseWorkflowDefinition, planOf } from './workflowDefinition';

const node = (extra: Record<string, unknown>) => ({ id: 'a', type: 'bash', bash: 'true', ...extra });
const def = (nodes: unknown[], extra: Record<string, unknown> = {}) => ({ name: 'demo', nodes, ...extra });
const errorOf = (raw: unknown) => {
  const result = parseWorkflowDefinition(raw);
  if (result.ok) throw new Error('expected the definition to be rejected');
  return result.error;
};

describe('workflow definitions', () => {
  it('accepts every node type with depends_on, tools, models, timeouts, retries and a worktree, applying defaults', () => {
    const result = parseWorkflowDefinition({
      name: 'plan-build',
      description: 'plan, approve, build',
      inputs: { task: { required: true }, style: { default: 'terse' } },
      worktree: { enabled: true },
      modelClass: 'balanced',
      timeout: '10m',
      nodes: [
        { id: 'plan', type: 'prompt', prompt: 'Plan {{inputs.task}}', allowed_tools: ['demo_ping'], modelClass: 'deep', reasoningEffort: 'high' },
        { id: 'lint', type: 'bash', bash: 'npm run lint', timeout: '2m', retries: 2 },
        { id: 'probe', type: 'script', runtime: 'python3', script: 'print(1)', timeout: 5000 },
        { id: 'gate', type: 'approval', depends_on: ['plan', 'lint', 'probe'], prompt: 'Ok? $ARTIFACTS_DIR/plan.md' },
        { id: 'stop', type: 'cancel', depends_on: ['gate'], when: { node: 'gate', equals: 'reject' }, reason: 'rejected' },
      ],
    });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const d = result.definition;
    expect(d.requiresProject).toBe(false);
    expect(d.inputs).toEqual({ task: { required: true }, style: { required: false, default: 'terse' } });
    expect(d.nodes[3]).toMatchObject({ type: 'approval', on_feedback: 'fail', depends_on: ['plan', 'lint', 'probe'] });
    expect(planOf(d)).toEqual([
      { id: 'plan', type: 'prompt', dependsOn: [], timeoutMs: 600_000, retries: 0 },
      { id: 'lint', type: 'bash', dependsOn: [], timeoutMs: 120_000, retries: 2 },
      { id: 'probe', type: 'script', dependsOn: [], timeoutMs: 5000, retries: 0 },
      { id: 'gate', type: 'approval', dependsOn: ['plan', 'lint', 'probe'], timeoutMs: 600_000, retries: 0, onFeedback: 'fail' },
      { id: 'stop', type: 'cancel', dependsOn: ['gate'], timeoutMs: 600_000, retries: 0, when: { node: 'gate', equals: 'reject' } },
    ]);
  });

  it('rejects an unknown dependency, naming the node list', () => {
    expect(errorOf(def([node({ id: 'build' }), node({ id: 'test', depends_on: ['bulid'] })]))).toBe(
      'definition.nodes.1.depends_on.0: unknown node "bulid" (known: build, test)',
    );
  });

  it('rejects a cycle, naming it', () => {
    expect(errorOf(def([node({ id: 'a', depends_on: ['c'] }), node({ id: 'b', depends_on: ['a'] }), node({ id: 'c', depends_on: ['b'] })]))).toBe(
      'definition.nodes.0.depends_on: dependency cycle: a → c → b → a',
    );
  });

  it('rejects a node depending on itself and duplicate ids', () => {
    expect(errorOf(def([node({ id: 'a', depends_on: ['a'] })]))).toBe('definition.nodes.0.depends_on.0: node "a" cannot depend on itself');
    expect(errorOf(def([node({ id: 'a' }), node({ id: 'a' })]))).toBe('definition.nodes.1.id: duplicate node id "a" (also nodes.0)');
  });

  it('rejects fields a node type does not have, and unknown node types', () => {
    expect(errorOf(def([node({ allowed_tools: ['x'] })]))).toBe('definition.nodes.0: Unrecognized key: "allowed_tools"');
    expect(errorOf(def([{ id: 'a', type: 'shell', bash: 'true' }]))).toBe(
      'definition.nodes.0.type: expected a node type: one of prompt, bash, script, approval, cancel',
    );
    expect(errorOf({ name: 'demo', nodes: [node({})], schedule: '* * * * *' })).toBe('definition: Unrecognized key: "schedule"');
  });

  it('rejects bad timeouts, retries, model classes, runtimes and names with the reason', () => {
    expect(errorOf(def([node({ timeout: 'soon' })]))).toBe(
      'definition.nodes.0.timeout: expected a duration like "30s", "5m", "1h" or a positive integer of milliseconds, got "soon"',
    );
    expect(errorOf(def([node({ timeout: '2d' })]))).toMatch(/^definition\.nodes\.0\.timeout: expected a duration/);
    expect(errorOf(def([node({ timeout: '48h' })]))).toBe('definition.nodes.0.timeout: must be between 1s and 24h, got "48h"');
    expect(errorOf(def([node({ retries: 11 })]))).toBe('definition.nodes.0.retries: must be at most 10');
    expect(errorOf(def([node({ retries: 1.5 })]))).toBe('definition.nodes.0.retries: must be an integer');
    expect(errorOf(def([{ id: 'p', type: 'prompt', prompt: 'x', modelClass: 'huge' }]))).toBe(
      'definition.nodes.0.modelClass: expected one of fast, balanced, deep',
    );
    expect(errorOf(def([{ id: 's', type: 'script', script: 'x', runtime: 'ruby' }]))).toBe(
      'definition.nodes.0.runtime: expected one of bash, sh, node, python3',
    );
    expect(errorOf({ name: 'Has Spaces', nodes: [node({})] })).toBe(
      'definition.name: must be 1 to 64 characters: a-z, 0-9, ".", "_" and "-", starting with a letter or digit',
    );
    expect(errorOf({ name: 'demo', nodes: [] })).toBe('definition.nodes: a workflow needs at least one node');
    expect(errorOf({ nodes: [node({})] })).toBe('definition.name: expected a string');
  });

  it('lets bash and script nodes (only) declare network and gitWrite, both off unless given', () => {
    const result = parseWorkflowDefinition(
      def([
        node({ id: 'fetch', network: true }),
        { id: 'commit', type: 'script', runtime: 'bash', script: 'git commit -am x', gitWrite: true, network: false },
        node({ id: 'plain' }),
      ]),
    );
    expect(result.ok && result.definition.nodes).toEqual([
      expect.objectContaining({ id: 'fetch', network: true }),
      expect.objectContaining({ id: 'commit', gitWrite: true, network: false }),
      expect.not.objectContaining({ network: expect.anything() }),
    ]);
    expect(errorOf(def([node({ network: 'yes' })]))).toBe('definition.nodes.0.network: expected true or false');
    expect(errorOf(def([node({ gitWrite: 1 })]))).toBe('definition.nodes.0.gitWrite: expected true or false');
    expect(errorOf(def([{ id: 'p', type: 'prompt', prompt: 'x', network: true }]))).toBe('definition.nodes.0: Unrecognized key: "network"');
  });

  it('requires a when condition to name an ancestor, with exactly one comparison', () => {
    expect(errorOf(def([node({ id: 'a' }), node({ id: 'b', when: { node: 'a', equals: 'x' } })]))).toBe(
      'definition.nodes.1.when.node: "a" is not a node "b" depends on (directly or transitively), so its output is not known when "b" is ready',
    );
    expect(errorOf(def([node({ id: 'a' }), node({ id: 'b', depends_on: ['a'], when: { node: 'a', equals: 'x', notEquals: 'y' } })]))).toBe(
      'definition.nodes.1.when: give exactly one of equals, notEquals, matches',
    );
    expect(errorOf(def([node({ id: 'a' }), node({ id: 'b', depends_on: ['a'], when: { node: 'a', matches: '(' } })]))).toMatch(
      /^definition\.nodes\.1\.when\.matches: not a regular expression/,
    );
  });

  it('lists every problem at once', () => {
    expect(errorOf(def([node({ id: 'a', retries: -1 }), node({ id: 'b', depends_on: ['zz'] })])).split('; ')).toEqual([
      'definition.nodes.0.retries: must be at least 0',
      'definition.nodes.1.depends_on.0: unknown node "zz" (known: a, b)',
    ]);
    expect(errorOf(def([node({ id: 'a' }), node({ id: 'b', depends_on: ['zz', 'yy'] })])).split('; ')).toEqual([
      'definition.nodes.1.depends_on.0: unknown node "zz" (known: a, b)',
      'definition.nodes.1.depends_on.1: unknown node "yy" (known: a, b)',
    ]);
  });

  it('parses durations, evaluates conditions and recognizes approvals', () => {
    expect([parseDuration('250ms'), parseDuration('30s'), parseDuration('5m'), parseDuration('1h'), parseDuration(1500), parseDuration('1.5s')]).toEqual([
      250, 30_000, 300_000, 3_600_000, 1500, undefined,
    ]);
    expect(conditionHolds({ node: 'a', equals: 'yes' }, ' yes\n')).toBe(true);
    expect(conditionHolds({ node: 'a', notEquals: 'yes' }, 'no')).toBe(true);
    expect(conditionHolds({ node: 'a', matches: '^ok' }, 'ok then')).toBe(true);
    expect(conditionHolds({ node: 'a', equals: 'x' }, undefined)).toBe(false);
    expect(['approve', ' Approved ', 'APPROVE'].map(isApproval)).toEqual([true, true, true]);
    expect(['yes', 'approve it', 'lgtm'].map(isApproval)).toEqual([false, false, false]);
  });
});
