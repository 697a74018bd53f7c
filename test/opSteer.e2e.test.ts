import { connectClient } from '@keelson/temporal';
import { runLimits } from '@keelson/schema';
import { gqlData } from './support/client';
import { startTestMesh, type TestMesh } from './support/mesh';
import { steerOp } from './support/runs';
import { until } from './support/until';
import { quietTemporalRuntime } from './support/temporalServer';

quietTemporalRuntime();

interface OpView {
  id: string;
  status: string;
  result: { counted: number; steered: string[] } | null;
  frames: { edges: { node: { type: string; note: string | null; actor: string | null } }[] };
}

describe('steerOp: a Temporal Update, answered, capped, deduplicated, across continue-as-new', () => {
  let mesh: TestMesh;
  let url: string;

  const getOp = async (id: string) =>
    (await gqlData<{ op: OpView }>(url, 'query ($id: ID!) { op(id: $id) { id status result frames(first: 500) { edges { node { type note actor } } } } }', { id })).op;
  const waitForOp = (id: string, done: (op: OpView) => boolean, timeoutMs = 30_000) => until(`op ${id}`, () => getOp(id), done, timeoutMs);
  const steer = (id: string, note: string, key?: string) => steerOp(url, id, note, key);
  const steered = (op: OpView) => op.frames.edges.filter((e) => e.node.type === 'OP_STEERED').map((e) => e.node.note);

  beforeAll(async () => {
    mesh = await startTestMesh({ KEELSON_RUN_HEARTBEAT_TIMEOUT_MS: '3000' });
    url = mesh.gatewayUrl;
  });

  afterAll(async () => {
    await mesh?.teardown();
  });

  it('accepts a steer on a live op (a repeated key is one steer) and rejects one on a finished op', async () => {
    const op = await mesh.runs.services.ops.start({ kind: 'countdown', input: { steps: 200, intervalMs: 100 }, steerable: true });
    const first = await steer(op.id, 'look left', 'k-1');
    expect(first.errors).toBeUndefined();
    expect(first.data?.steerOp).toEqual({ id: op.id, status: 'RUNNING' });
    expect((await steer(op.id, 'look left', 'k-1')).errors).toBeUndefined();
    expect((await steer(op.id, 'finish', 'k-2')).errors).toBeUndefined();
    const done = await waitForOp(op.id, (o) => o.status !== 'RUNNING');
    expect(done.status).toBe('SUCCEEDED');
    expect(steered(done)).toEqual(['look left', 'finish']);
    expect(done.result?.steered).toEqual(['look left', 'finish']);
    // Written by the worker's activity, yet naming the caller: the Update carried them.
    const steerActors = done.frames.edges.filter((e) => e.node.type === 'OP_STEERED').map((e) => e.node.actor);
    expect(steerActors).toEqual([expect.stringMatching(/^token:/), expect.stringMatching(/^token:/)]);

    const late = await steer(op.id, 'too late');
    expect(late.errors?.[0]).toMatchObject({ message: `op ${op.id} is SUCCEEDED; a finished op cannot be steered`, extensions: { code: 'CONFLICT' } });
    const blank = await steer(op.id, '   ');
    expect(blank.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });

  it('caps a steer flood: what is over the cap is rejected with the reason, every accepted steer is delivered once', async () => {
    const op = await mesh.runs.services.ops.start({ kind: 'countdown', input: { steps: 600, intervalMs: 100 }, steerable: true });
    const notes = Array.from({ length: 60 }, (_, i) => `flood ${i}`);
    const answers = await Promise.all(notes.map((n) => steer(op.id, n)));
    const accepted = notes.filter((_, i) => !answers[i]!.errors);
    const rejected = answers.filter((a) => a.errors).map((a) => a.errors![0]!);
    console.log(`steer flood: ${accepted.length} accepted, ${rejected.length} rejected (at most ${runLimits.steersPending} waiting)`);
    expect(accepted.length).toBeGreaterThan(0);
    expect(rejected.length).toBeGreaterThan(0);
    for (const r of rejected) {
      expect(r.extensions?.code).toBe('CONFLICT');
      expect(r.message).toMatch(new RegExp(`steers waiting to be delivered \\(at most ${runLimits.steersPending}\\)`));
    }
    const all = await waitForOp(op.id, (o) => steered(o).length >= accepted.length);
    expect([...steered(all)].sort()).toEqual([...accepted].sort());
    await gqlData(url, 'mutation ($id: ID!) { cancelOp(id: $id) { id } }', { id: op.id });
    expect((await waitForOp(op.id, (o) => o.status !== 'RUNNING')).status).toBe('CANCELLED');
  });

  it('continues as new while it runs and keeps its steers in order', async () => {
    const op = await mesh.runs.services.ops.start({ kind: 'countdown', input: { steps: 600, intervalMs: 100 }, steerable: true, maxHistoryEvents: 30 });
    const notes = Array.from({ length: 12 }, (_, i) => `note ${i}`);
    // Sent as fast as answers come; a steer refused while 8 wait (the cap) is sent again with its key
    // once they are delivered, as the refusal says — this case is about order across continue-as-new.
    let capped = 0;
    for (const note of notes) {
      for (;;) {
        const answer = await steer(op.id, note, `can-${note}`);
        if (!answer.errors?.[0]?.message.includes('steers waiting to be delivered')) {
          expect(answer.errors).toBeUndefined();
          break;
        }
        capped += 1;
        expect(capped).toBeLessThan(200);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    // A retry of an early key after the op moved on to a new run is still one steer.
    expect((await steer(op.id, notes[0]!, `can-${notes[0]}`)).errors).toBeUndefined();
    expect((await steer(op.id, 'finish')).errors).toBeUndefined();
    const done = await waitForOp(op.id, (o) => o.status !== 'RUNNING');
    expect(done.status).toBe('SUCCEEDED');
    expect(steered(done)).toEqual([...notes, 'finish']);
    expect(done.result?.steered).toEqual([...notes, 'finish']);

    const client = await connectClient({ address: mesh.temporal.address, namespace: mesh.temporal.namespace });
    try {
      const runs: string[] = [];
      for await (const e of client.workflow.list({ query: `WorkflowId = '${op.temporalWorkflowId}'` })) runs.push(e.runId);
      console.log(`op ${op.id} ran as ${runs.length} executions`);
      expect(runs.length).toBeGreaterThan(1);
      // What the Temporal UI lists it under (kept across continue-as-new by the first execution's start).
      const first = await client.workflow.getHandle(op.temporalWorkflowId, runs.at(-1)).describe();
      expect(await first.staticSummary()).toMatch(new RegExp(`· op ${op.id.slice(0, 8)}$`));
      expect(await first.staticDetails()).toContain(`- op: \`${op.id}\``);
    } finally {
      await client.connection.close();
    }
  });
});
