import { randomUUID } from 'node:crypto';
import { MeshError, POLICY_APPROVAL_NODE, POLICY_APPROVAL_WORKFLOW } from '@keelson/schema';
import { silentLogger } from '@keelson/service';
import type { MessageChunk, OpHandle, Policy, RibContext, RibRunEvent } from '@keelson/ribs-contract';
import { z } from 'zod';
import { staticConfigPort } from '@keelson/host-doubles';
import type { RibHost } from '../src/ribHost';
import type { NewRibOp, OpsPort } from '../src/runs/liveOps';
import { createRibRuns, type RibRuns } from '../src/runs/ribRuns';
import type { RunsPort, RunsPortAnswer, RunsPortRun } from '../src/runs/runsPort';
import { rib, sleep, startHost } from './support/quietHost';

/** The runs domain in memory: catalog runs start RUNNING, gates are answered by `respond`. */
class FakeRuns implements RunsPort {
  readonly runs = new Map<string, RunsPortRun>();
  readonly calls: string[] = [];
  private readonly waiters = new Set<() => void>();
  constructor(private readonly catalog: Record<string, { ribId: string | null }>) {}

  private create(name: string, ribId: string | null, startedByRibId: string | null, gate?: string, inputs: Record<string, string> = {}): string {
    const id = randomUUID();
    this.runs.set(id, {
      id,
      workflowName: name,
      status: gate ? 'PAUSED' : 'RUNNING',
      launch: 1,
      inputs,
      startedAt: new Date().toISOString(),
      completedAt: null,
      error: null,
      ribId,
      startedByRibId,
      projectId: null,
      nodes: [{ id: gate ?? 'work', type: gate ? 'approval' : 'bash', status: gate ? 'WAITING' : 'RUNNING', output: null, error: null }],
      pendingApproval: gate ? { nodeId: gate, prompt: `gate ${gate}`, pauseId: `p-${id}`, artifacts: [{ path: 'plan.md', text: '# plan' }] } : null,
      checkout: null,
      temporalWorkflowId: `run-${name}-${id.slice(0, 8)}`,
    });
    return id;
  }
  /** A test settles a run. */
  settle(id: string, status: 'SUCCEEDED' | 'FAILED' | 'CANCELLED', output?: string): void {
    const run = this.runs.get(id)!;
    this.runs.set(id, {
      ...run,
      status,
      completedAt: new Date().toISOString(),
      pendingApproval: null,
      nodes: run.nodes.map((n) => ({ ...n, status, output: output ?? n.output })),
      ...(status === 'FAILED' ? { error: 'it failed' } : {}),
    });
    for (const wake of this.waiters) wake();
  }
  /** A paused run of a gated catalog workflow. */
  paused(name: string, ribId: string | null, startedByRibId: string | null): string {
    return this.create(name, ribId, startedByRibId, 'gate');
  }
  async start(req: Parameters<RunsPort['start']>[0]) {
    this.calls.push(`start ${req.name}`);
    const entry = this.catalog[req.name];
    if (!entry) throw new MeshError('NOT_FOUND', `workflow "${req.name}" does not exist`);
    return { runId: this.create(req.name, entry.ribId, req.startedByRibId, undefined, req.inputs) };
  }
  async startDefinition(req: Parameters<RunsPort['startDefinition']>[0]) {
    const def = req.definition as { name: string; nodes: { id: string; type: string }[] };
    this.calls.push(`startDefinition ${def.name}`);
    const gate = def.nodes.find((n) => n.type === 'approval')?.id;
    return { runId: this.create(def.name, req.ribId, req.startedByRibId, gate, req.inputs) };
  }
  async get(runId: string) {
    const run = this.runs.get(runId);
    return run ? structuredClone(run) : undefined;
  }
  async pause(runId: string, pauseId: string) {
    const run = this.runs.get(runId);
    return run && `p-${runId}` === pauseId ? { nodeId: 'gate', prompt: 'gate gate' } : undefined;
  }
  // Runs open their gate on start here: a paused run's pause is its gate, with an approval id of its own.
  async gate(runId: string) {
    const run = this.runs.get(runId);
    if (!run?.pendingApproval) throw new MeshError('CONFLICT', `run ${runId} settled without waiting at a gate`);
    return { pauseId: run.pendingApproval.pauseId, approvalId: `a-${runId}` };
  }
  settled(runId: string, signal?: AbortSignal): Promise<RunsPortRun> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const run = this.runs.get(runId)!;
        if (['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(run.status)) {
          this.waiters.delete(check);
          resolve(structuredClone(run));
        }
      };
      signal?.addEventListener('abort', () => {
        this.waiters.delete(check);
        reject(new Error('aborted'));
      });
      this.waiters.add(check);
      check();
    });
  }
  async cancel(runId: string): Promise<RunsPortAnswer> {
    this.calls.push(`cancel ${runId}`);
    this.settle(runId, 'CANCELLED');
    return { ok: true };
  }
  async respond(req: Parameters<RunsPort['respond']>[0]): Promise<RunsPortAnswer> {
    this.calls.push(`respond ${req.nodeId} ${req.text}`);
    const run = this.runs.get(req.runId)!;
    if (run.status !== 'PAUSED' || run.pendingApproval?.nodeId !== req.nodeId) return { ok: false, error: `gate "${req.nodeId}" is not open` };
    if (req.pauseId && req.pauseId !== run.pendingApproval.pauseId) return { ok: false, error: `pauseId ${req.pauseId} is stale` };
    this.settle(req.runId, req.text === 'approve' ? 'SUCCEEDED' : 'FAILED');
    return { ok: true };
  }
  async runEvents() {
    return [];
  }
  async op() {
    return undefined;
  }
  async opFrames() {
    return [];
  }
  async cancelOp(): Promise<never> {
    throw new MeshError('NOT_FOUND', 'no op');
  }
  async steerOp(): Promise<never> {
    throw new MeshError('NOT_FOUND', 'no op');
  }
}

/** Frames as an in-memory op store records them. */
class FakeOps implements OpsPort {
  readonly frames: string[] = [];
  readonly started: NewRibOp[] = [];
  fail = false;
  async start(op: NewRibOp) {
    await sleep(5);
    if (this.fail) throw new Error('Temporal is down');
    this.started.push(op);
    this.frames.push(`${op.id} OP_STARTED`);
  }
  async log(opId: string, line: string) {
    this.frames.push(`${opId} OP_LOG ${line}`);
  }
  async progress(opId: string, p: { fraction?: number }) {
    this.frames.push(`${opId} OP_PROGRESS ${p.fraction}`);
  }
}

interface Booted {
  host: RibHost;
  runs: FakeRuns;
  ops: FakeOps;
  ribRuns: RibRuns;
  lab: RibContext;
  peer: RibContext;
  /** Every policy evaluation of a run seam, `<tool> <ribId>`. */
  evaluated: string[];
  events: RibRunEvent[];
}

/** A policy of the `peer` rib that denies `deny-me`, asks for `ask-me`, and records what it saw. */
function recordingPolicy(evaluated: string[]): Policy {
  return {
    id: 'watch',
    on: [
      { phase: 'tool_call', tool: 'workflow_run' },
      { phase: 'tool_call', tool: 'workflow_respond' },
    ],
    evaluate(event) {
      if (event.phase !== 'tool_call') return { outcome: 'allow' };
      evaluated.push(`${event.tool} ${event.ribId}`);
      const name = (event.args as { name?: string } | undefined)?.name;
      if (name === 'deny-me') return { outcome: 'deny', reason: 'not today' };
      if (name === 'ask-me') return { outcome: 'ask', reason: 'starting ask-me needs a human' };
      return { outcome: 'allow' };
    },
  };
}

async function boot(opts: { env?: Record<string, string>; config?: Parameters<typeof staticConfigPort>[0] } = {}): Promise<Booted> {
  const runs = new FakeRuns({
    'from-config': { ribId: null },
    'from-env': { ribId: null },
    'not-granted': { ribId: null },
    'deny-me': { ribId: null },
    'ask-me': { ribId: null },
    'lab-own': { ribId: 'lab' },
  });
  const ops = new FakeOps();
  const ribRuns = createRibRuns({ runs: () => runs, ops: () => ops, home: '/tmp', logger: silentLogger() });
  const evaluated: string[] = [];
  const events: RibRunEvent[] = [];
  const { host } = await startHost(
    [
      rib('lab', {
        contributeWorkflows: () => [
          {
            definition: { name: 'lab-own', nodes: [{ id: 'emit', type: 'bash', bash: 'echo' }] },
            bindSnapshotKey: 'rib:lab:board',
            validate: (data) => z.object({ count: z.number() }).parse(data),
          },
        ],
        onRunEvent: (event) => {
          events.push(event);
        },
      }),
      rib('peer', { contributePolicies: () => [recordingPolicy(evaluated)] }),
    ],
    {
      env: opts.env ?? {},
      config: staticConfigPort(opts.config ?? {}),
      ...ribRuns.hostOptions,
    },
  );
  ribRuns.bind(host);
  return { host, runs, ops, ribRuns, lab: host.context('lab')!, peer: host.context('peer')!, evaluated, events };
}

const granted = {
  env: { KEELSON_RIB_WORKFLOW_GRANTS: 'lab:from-env,deny-me,ask-me', KEELSON_RIB_APPROVAL_GRANTS: 'lab:from-env' },
  config: { ribWorkflowGrants: { lab: ['from-config'] }, ribApprovalGrants: { lab: ['from-config'] } },
};

describe('startWorkflow', () => {
  it('is denied by default, before the policy engine: nothing starts and no approval is asked', async () => {
    const b = await boot();
    await expect(b.lab.startWorkflow!('from-config')).rejects.toMatchObject({ code: 'FORBIDDEN', message: expect.stringMatching(/no grant in ribWorkflowGrants or KEELSON_RIB_WORKFLOW_GRANTS/) });
    await expect(b.lab.startWorkflow!('ask-me')).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(b.evaluated).toEqual([]);
    expect(b.runs.calls).toEqual([]);
  });

  it('starts what the config file or KEELSON_RIB_WORKFLOW_GRANTS grants (the two union), stamped with the starting rib', async () => {
    const b = await boot(granted);
    const fromConfig = await b.lab.startWorkflow!('from-config', { topic: 'x' });
    const fromEnv = await b.lab.startWorkflow!('from-env');
    expect((await b.runs.get(fromConfig.runId))!).toMatchObject({ workflowName: 'from-config', startedByRibId: 'lab', inputs: { topic: 'x' } });
    expect((await b.runs.get(fromEnv.runId))!.startedByRibId).toBe('lab');
    await expect(b.lab.startWorkflow!('not-granted')).rejects.toMatchObject({ code: 'FORBIDDEN' });
    // Grants are per rib: peer holds none.
    await expect(b.peer.startWorkflow!('from-config')).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(b.peer.startWorkflow!('from-env')).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(b.evaluated).toEqual(['workflow_run lab', 'workflow_run lab']);
  });

  it('rejects a granted start that policy denies, and one of an unknown workflow', async () => {
    const b = await boot({ env: { KEELSON_RIB_WORKFLOW_GRANTS: 'lab:deny-me,ghost' } });
    await expect(b.lab.startWorkflow!('deny-me')).rejects.toMatchObject({ code: 'FORBIDDEN', message: 'workflow_run deny-me denied by policy peer:watch: not today' });
    await expect(b.lab.startWorkflow!('ghost')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(b.lab.startWorkflow!('ghost', { n: 1 } as never)).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
  });

  it('holds a start that policy asks about on a policy-approval gate the operator answers like any gate', async () => {
    const b = await boot(granted);
    const starting = b.lab.startWorkflow!('ask-me');
    let approval: RunsPortRun | undefined;
    for (let i = 0; i < 100 && !approval; i++) {
      await sleep(5);
      approval = [...b.runs.runs.values()].find((r) => r.workflowName === POLICY_APPROVAL_WORKFLOW);
    }
    expect(approval).toMatchObject({ status: 'PAUSED', ribId: null, startedByRibId: null, pendingApproval: { nodeId: POLICY_APPROVAL_NODE } });
    expect(approval!.pendingApproval!.prompt).toBe('gate approve');
    expect(b.runs.calls).toEqual([`startDefinition ${POLICY_APPROVAL_WORKFLOW}`]);
    await b.runs.respond({ runId: approval!.id, nodeId: POLICY_APPROVAL_NODE, text: 'approve' });
    const { runId } = await starting;
    expect((await b.runs.get(runId))!.workflowName).toBe('ask-me');
  });

  it('denies an asked start nobody answers within KEELSON_CROSS_RIB_CALL_TIMEOUT_MS, and cancels its approval', async () => {
    const b = await boot({ env: { ...granted.env, KEELSON_CROSS_RIB_CALL_TIMEOUT_MS: '150' } });
    await expect(b.lab.startWorkflow!('ask-me')).rejects.toMatchObject({ code: 'FORBIDDEN', message: expect.stringMatching(/not approved/) });
    const approval = [...b.runs.runs.values()].find((r) => r.workflowName === POLICY_APPROVAL_WORKFLOW)!;
    expect(approval.status).toBe('CANCELLED');
    expect(b.runs.calls).not.toContain('start ask-me');
  });
});

describe('respondToRun', () => {
  it('is denied by default before policy, only for runs the rib started, and granted by the config file or KEELSON_RIB_APPROVAL_GRANTS', async () => {
    const denied = await boot();
    const run = denied.runs.paused('from-config', null, 'lab');
    await expect(denied.lab.respondToRun!(run, 'gate', 'approve')).resolves.toEqual({
      ok: false,
      error: "rib 'lab' may not answer the gates of workflow 'from-config': no grant in ribApprovalGrants or KEELSON_RIB_APPROVAL_GRANTS",
    });
    expect(denied.evaluated).toEqual([]);
    expect(denied.runs.calls).toEqual([]);

    const b = await boot(granted);
    const viaConfig = b.runs.paused('from-config', null, 'lab');
    const viaEnv = b.runs.paused('from-env', null, 'lab');
    const notMine = b.runs.paused('from-config', null, 'peer');
    await expect(b.lab.respondToRun!(notMine, 'gate', 'approve')).resolves.toEqual({ ok: false, error: `run ${notMine} was not started by rib 'lab'` });
    await expect(b.lab.respondToRun!(viaConfig, 'gate', 'approve', 'stale')).resolves.toEqual({ ok: false, error: 'pauseId stale is stale' });
    await expect(b.lab.respondToRun!(viaConfig, 'gate', 'approve', `p-${viaConfig}`)).resolves.toEqual({ ok: true });
    await expect(b.lab.respondToRun!(viaEnv, 'gate', 'approve')).resolves.toEqual({ ok: true });
    await expect(b.lab.respondToRun!(viaEnv, 'gate', 'approve')).resolves.toEqual({ ok: false, error: 'gate "gate" is not open' });
    expect(b.evaluated.filter((e) => e.startsWith('workflow_respond'))).toHaveLength(4);
    // The start grant is not an approval grant.
    const startOnly = await boot({ env: { KEELSON_RIB_WORKFLOW_GRANTS: 'lab:from-env' } });
    const started = startOnly.runs.paused('from-env', null, 'lab');
    await expect(startOnly.lab.respondToRun!(started, 'gate', 'approve')).resolves.toMatchObject({ ok: false });
  });
});

describe('reading and cancelling runs', () => {
  it('getRunStatus answers for runs the rib started or whose workflow it owns, undefined for any other', async () => {
    const b = await boot(granted);
    const started = b.runs.paused('from-config', null, 'lab');
    const owned = (await b.runs.start({ name: 'lab-own', startedByRibId: null })).runId;
    const other = b.runs.paused('from-config', null, 'peer');
    expect(await b.lab.getRunStatus!(started)).toEqual({
      runId: started,
      workflowName: 'from-config',
      status: 'paused',
      pendingApproval: { nodeId: 'gate', prompt: 'gate gate', pauseId: `p-${started}`, artifacts: [{ path: 'plan.md', text: '# plan' }] },
      checkout: { path: null, branch: null, worktreeEstablished: false },
      nodes: [{ id: 'gate', status: 'waiting' }],
    });
    expect((await b.lab.getRunStatus!(owned))!.status).toBe('running');
    expect(await b.lab.getRunStatus!(other)).toBeUndefined();
    expect(await b.peer.getRunStatus!(started)).toBeUndefined();
    expect(await b.lab.getRunStatus!('not-a-run')).toBeUndefined();
  });

  it('cancelRun cancels a live run the rib started and answers { ok: false } otherwise', async () => {
    const b = await boot(granted);
    const mine = (await b.lab.startWorkflow!('from-env')).runId;
    const owned = (await b.runs.start({ name: 'lab-own', startedByRibId: null })).runId;
    await expect(b.peer.cancelRun!(mine)).resolves.toEqual({ ok: false, error: `run ${mine} was not started by rib 'peer'` });
    await expect(b.lab.cancelRun!(owned)).resolves.toEqual({ ok: false, error: `run ${owned} was not started by rib 'lab'` });
    await expect(b.lab.cancelRun!(mine)).resolves.toEqual({ ok: true });
    await expect(b.lab.cancelRun!(mine)).resolves.toEqual({ ok: false, error: `run ${mine} already CANCELLED` });
  });
});

describe('runWorkflow', () => {
  it('fails a worktree definition or an invalid one without invoking a node, and resolves to the terminal result', async () => {
    const b = await boot();
    const worktree = await b.lab.runWorkflow!({ name: 'iso', worktree: { enabled: true }, nodes: [{ id: 'a', type: 'bash', bash: 'echo' }] });
    expect(worktree).toMatchObject({ status: 'failed', nodes: {}, error: expect.stringMatching(/does not own a worktree lifecycle/) });
    const invalid = await b.lab.runWorkflow!({ name: 'bad', nodes: [{ id: 'a', type: 'bash' }] });
    expect(invalid).toMatchObject({ status: 'failed', nodes: {}, error: expect.stringMatching(/nodes\.0\.bash/) });
    const impostor = await b.lab.runWorkflow!({ name: POLICY_APPROVAL_WORKFLOW, nodes: [{ id: 'approve', type: 'approval', prompt: 'Approve?' }] });
    expect(impostor).toMatchObject({ status: 'failed', error: expect.stringMatching(/reserved/) });
    expect(b.runs.calls).toEqual([]);

    const running = b.lab.runWorkflow!({ name: 'inline', nodes: [{ id: 'work', type: 'bash', bash: 'echo hi' }] }, { a: 'b' });
    await sleep(10);
    const run = [...b.runs.runs.values()].find((r) => r.workflowName === 'inline')!;
    expect(run).toMatchObject({ ribId: 'lab', startedByRibId: 'lab', inputs: { a: 'b' } });
    b.runs.settle(run.id, 'SUCCEEDED', 'hi');
    await expect(running).resolves.toEqual({ status: 'succeeded', nodes: { work: { state: 'succeeded', output: 'hi' } } });
  });
});

describe('refreshWorkflow and bound output', () => {
  it('publishes a succeeded run through the validator, drops an invalid payload keeping the prior version, and never throws', async () => {
    const b = await boot();
    const refreshing = b.lab.refreshWorkflow!('lab-own');
    await sleep(10);
    const first = [...b.runs.runs.values()].find((r) => r.workflowName === 'lab-own')!;
    b.runs.settle(first.id, 'SUCCEEDED', '{"count": 2}');
    await refreshing;
    expect((await b.host.readSnapshot('rib:lab:board'))).toMatchObject({ version: 1, payload: { count: 2 } });

    const again = b.lab.refreshWorkflow!('lab-own');
    await sleep(10);
    const second = [...b.runs.runs.values()].find((r) => r.workflowName === 'lab-own' && r.status === 'RUNNING')!;
    b.runs.settle(second.id, 'SUCCEEDED', '{"count": "many"}');
    await again;
    expect((await b.host.readSnapshot('rib:lab:board'))).toMatchObject({ version: 1, payload: { count: 2 } });

    await expect(b.lab.refreshWorkflow!('not-mine')).resolves.toBeUndefined();
    await expect(b.peer.refreshWorkflow!('lab-own')).resolves.toBeUndefined();
  });
});

describe('onRunEvent from the runs stream', () => {
  it('gives the starter running, paused, running and the terminal event, and an owner that did not start it only the launch and terminal pair', async () => {
    const b = await boot();
    const starterEvents: RibRunEvent[] = [];
    const { host } = await startHost(
      [
        rib('lab', { contributeWorkflows: () => [{ definition: { name: 'lab-own', nodes: [{ id: 'a', type: 'bash', bash: 'echo' }] } }], onRunEvent: (e) => void b.events.push(e) }),
        rib('peer', { onRunEvent: (e) => void starterEvents.push(e) }),
      ],
      { ...b.ribRuns.hostOptions },
    );
    b.ribRuns.bind(host);
    const runId = b.runs.paused('lab-own', 'lab', 'peer');
    for (const type of ['RUN_STARTED', 'RUN_PAUSED', 'RUN_RESUMED', 'RUN_SUCCEEDED']) {
      if (type === 'RUN_SUCCEEDED') b.runs.settle(runId, 'SUCCEEDED');
      await b.ribRuns.router.route({ type, key: runId, payload: { runId, launch: 1, pauseId: `p-${runId}` }, at: new Date() });
      await b.ribRuns.router.route({ type: 'NODE_STARTED', key: runId, payload: { runId }, at: new Date() });
    }
    await sleep(10);
    expect(starterEvents.map((e) => e.status)).toEqual(['running', 'paused', 'running', 'succeeded']);
    expect(starterEvents[1]).toMatchObject({ runId, workflowName: 'lab-own', startedByRibId: 'peer', pendingApproval: { nodeId: 'gate', prompt: 'gate gate' } });
    expect(starterEvents[3]!.completedAt).toEqual(expect.any(String));
    expect(b.events.map((e) => e.status)).toEqual(['running', 'succeeded']);
  });
});

describe('registerOp', () => {
  it('returns a handle at once; frames follow the registration in call order and the outcome settles after them', async () => {
    const b = await boot();
    const steered: string[] = [];
    const handle: OpHandle = b.lab.registerOp!({ kind: 'lab.sync', title: 'Sync', onSteer: (note) => void steered.push(note) });
    expect(handle.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(b.ops.started).toEqual([]);
    handle.log('one');
    handle.progress({ fraction: 0.5 });
    handle.done({ synced: 3 });
    handle.log('after the end');
    const live = b.ribRuns.liveOps.held(handle.id)!;
    await expect(live.outcome).resolves.toEqual({ status: 'succeeded', result: { synced: 3 } });
    expect(b.ops.frames).toEqual([`${handle.id} OP_STARTED`, `${handle.id} OP_LOG one`, `${handle.id} OP_PROGRESS 0.5`]);
    expect(b.ops.started[0]).toMatchObject({ ribId: 'lab', kind: 'lab.sync', title: 'Sync', steerable: true, projectId: null });
    await live.steer('too late');
    expect(steered).toEqual([]);
  });

  it('aborts the signal on cancel, forwards steers in order, and fails cleanly when it cannot start', async () => {
    const b = await boot();
    const seen: string[] = [];
    const handle = b.lab.registerOp!({ kind: 'lab.watch', onSteer: async (note) => {
      await sleep(5);
      seen.push(note);
    } });
    const live = b.ribRuns.liveOps.held(handle.id)!;
    await Promise.all([live.steer('a'), live.steer('b')]);
    expect(seen).toEqual(['a', 'b']);
    live.cancel('cancelled by request');
    expect(handle.signal.aborted).toBe(true);
    await expect(live.outcome).resolves.toEqual({ status: 'stopped', error: 'cancelled by request' });

    b.ops.fail = true;
    const doomed = b.lab.registerOp!({ kind: 'lab.doomed' });
    await sleep(20);
    expect(doomed.signal.aborted).toBe(true);
    expect((doomed.signal.reason as Error).message).toBe('could not start: Temporal is down');
    expect(() => b.lab.registerOp!({ kind: 'Bad Kind' })).toThrow(/registerOp\.kind/);
  });
});

describe('the run_* tools', () => {
  it('are the host\'s, reach any run by id, and answer failures as error results', async () => {
    const b = await boot(granted);
    expect(b.host.tools().filter((t) => t.family === 'run').map((t) => [t.name, t.ownerRibId])).toEqual([
      ['run_status', undefined],
      ['run_events', undefined],
      ['run_cancel', undefined],
      ['run_steer', undefined],
    ]);
    const runId = b.runs.paused('from-env', null, 'lab');
    const call = async (tool: string, input: unknown) => {
      const chunks: MessageChunk[] = [];
      const outcome = await b.host.executeTool({ name: tool, input, surface: 'chat', onChunk: (c) => chunks.push(c) });
      return { outcome, chunks: chunks as { content?: string; isError?: boolean }[] };
    };
    const status = await call('run_status', { id: runId });
    expect(JSON.parse(status.chunks[0]!.content!)).toMatchObject({ kind: 'run', status: 'PAUSED', pendingApproval: { nodeId: 'gate', pauseId: `p-${runId}` } });
    const steer = await call('run_steer', { id: runId, note: 'faster' });
    expect(steer.chunks[0]).toMatchObject({ isError: true, content: expect.stringMatching(/runs take no steering notes/) });
    const missing = await call('run_status', { id: 'nope' });
    expect(missing.chunks[0]).toMatchObject({ isError: true, content: 'no run or op "nope"' });
    await call('run_cancel', { id: runId });
    expect(b.runs.runs.get(runId)!.status).toBe('CANCELLED');
  });
});
