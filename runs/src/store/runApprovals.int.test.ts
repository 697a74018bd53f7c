import type { DomainState } from '@keelson/platform';
import { randomUUID } from 'node:crypto';
import { ApprovalReader } from '@keelson/operator';
import { POLICY_APPROVAL_WORKFLOW, streams } from '@keelson/schema';
import { openTestDomainState } from '../../../test/support/domainState';
import { definitionOf, registerRun } from '../../../test/support/registerRun';
import { RUNS_MIGRATIONS_TABLE, runsMigrations } from '../migrations';
import { RunStore } from './runStore';

/** The inbox rows RunStore writes in a gate's own transitions, on real Postgres. */
describe('run gates in the approval inbox', () => {
  let state: DomainState;
  let store: RunStore;
  let reader: ApprovalReader;

  beforeAll(async () => {
    state = await openTestDomainState(runsMigrations, RUNS_MIGRATIONS_TABLE);
    store = new RunStore(state.dataSource, state.events);
    reader = new ApprovalReader(state.dataSource);
  });
  afterAll(() => state?.close());

  async function gatedRun(workflowName: string): Promise<string> {
    const { id } = await registerRun(store, definitionOf({ name: workflowName, nodes: [{ id: 'approve', type: 'approval', prompt: 'May it?' }] }), { cwd: '/tmp' });
    await store.beginLaunch(id, 1, randomUUID());
    return id;
  }

  const approvalEvents = async (approvalId: string) =>
    ((await state.dataSource.query('SELECT type, actor FROM events WHERE stream = $1 AND key = $2 ORDER BY seq', [streams.approvals, approvalId])) as { type: string; actor: unknown }[]);

  it('opens once per pause, records the one answer with its actor, and ignores a repeat', async () => {
    const runId = await gatedRun('gated');
    const pauseId = randomUUID();
    await store.openGate(runId, 'approve', 1, pauseId, 'May it?', []);
    await store.openGate(runId, 'approve', 1, pauseId, 'May it?', []); // an activity retried after its commit
    const [open] = (await reader.page({ status: 'OPEN' }, null, 10)).filter((a) => a.runId === runId);
    expect(open).toMatchObject({ kind: 'RUN_GATE', question: 'May it?', sourceKey: `run:${pauseId}`, detail: { runId, nodeId: 'approve', pauseId } });

    const actor = { subject: 'user:ops', kind: 'token' as const };
    await store.closeGate(runId, pauseId, { text: 'approve', decision: 'approved', outcome: 'SUCCEEDED', actor });
    await store.closeGate(runId, pauseId, { text: 'approve', decision: 'approved', outcome: 'SUCCEEDED', actor });
    const [answered] = await reader.byIds([open!.id]);
    expect(answered).toMatchObject({ status: 'ANSWERED', decision: 'APPROVE', answer: 'approve', answeredBy: 'user:ops' });
    expect(await approvalEvents(open!.id)).toEqual([
      { type: 'APPROVAL_OPENED', actor: null },
      { type: 'APPROVAL_ANSWERED', actor },
    ]);
    // Finishing the run leaves an answered approval alone.
    await store.finishRun(runId, 1, 'SUCCEEDED');
    expect((await reader.byIds([open!.id]))[0]!.status).toBe('ANSWERED');
  });

  it("a policy ask's cancelled run expires it; a run gate's cancelled run cancels it", async () => {
    const ask = await gatedRun(POLICY_APPROVAL_WORKFLOW);
    const gate = await gatedRun('gated');
    const [p1, p2] = [randomUUID(), randomUUID()];
    await store.openGate(ask, 'approve', 1, p1, 'Policy p asks', []);
    await store.openGate(gate, 'approve', 1, p2, 'May it?', []);
    await store.finishRun(ask, 1, 'CANCELLED', 'cancelled by request');
    await store.finishRun(gate, 1, 'CANCELLED', 'cancelled by request');
    const rows = (await reader.page({}, null, 100)).filter((a) => a.runId === ask || a.runId === gate);
    expect(rows.map((a) => [a.kind, a.status, a.closeReason])).toEqual([
      ['POLICY_ASK', 'EXPIRED', 'the asker stopped waiting'],
      ['RUN_GATE', 'CANCELLED', 'the run cancelled'],
    ]);
    expect((await approvalEvents(rows[0]!.id)).map((e) => e.type)).toEqual(['APPROVAL_OPENED', 'APPROVAL_EXPIRED']);
    expect((await approvalEvents(rows[1]!.id)).map((e) => e.type)).toEqual(['APPROVAL_OPENED', 'APPROVAL_CANCELLED']);
    // An answer arriving after the close records nothing in the inbox.
    await store.closeGate(gate, p2, { text: 'approve', decision: 'approved', outcome: 'SUCCEEDED' });
    expect((await reader.byIds([rows[1]!.id]))[0]!.status).toBe('CANCELLED');
  });

  it('rolls back with its gate: a failed transition leaves no row and no event', async () => {
    const before = (await reader.page({}, null, 500)).length;
    await expect(store.openGate(randomUUID(), 'approve', 1, randomUUID(), 'nobody', [])).rejects.toThrow(/does not exist/);
    expect((await reader.page({}, null, 500)).length).toBe(before);
  });
});
