import { gql, gqlData, subscribeResumable } from './support/client';
import { startTestMesh, type TestMesh } from './support/mesh';
import { steerOp } from './support/runs';
import { until } from './support/until';
import { quietTemporalRuntime } from './support/temporalServer';

quietTemporalRuntime();

interface FrameView {
  cursor: string;
  type: string;
  line: string | null;
  fraction: number | null;
  note: string | null;
  error: string | null;
  actor: string | null;
}

interface OpView {
  id: string;
  kind: string;
  title: string | null;
  status: string;
  result: unknown;
  error: string | null;
  steerable: boolean;
  temporalWorkflowId: string;
  frames: { edges: { node: FrameView }[] };
}

const FRAME_FIELDS = 'cursor type line fraction note error actor';
const OP_FIELDS = `id kind title status result error steerable temporalWorkflowId frames(first: 200) { edges { node { ${FRAME_FIELDS} } } }`;

describe('durable ops through the gateway', () => {
  let mesh: TestMesh;
  let url: string;

  const getOp = async (id: string) => (await gqlData<{ op: OpView }>(url, `query ($id: ID!) { op(id: $id) { ${OP_FIELDS} } }`, { id })).op;
  const waitForOp = (id: string, done: (op: OpView) => boolean, timeoutMs = 30_000) => until(`op ${id}`, () => getOp(id), done, timeoutMs);
  const steer = (id: string, note: string) => steerOp(url, id, note);
  const cancel = (id: string) => gql<{ cancelOp: OpView }>(url, 'mutation ($id: ID!) { cancelOp(id: $id) { id status } }', { id });

  beforeAll(async () => {
    mesh = await startTestMesh();
    url = mesh.gatewayUrl;
  });

  afterAll(async () => {
    await mesh?.teardown();
  });

  it('persists log and progress frames and the result, delivers a steer to the running op, and refuses a steer once it finished', async () => {
    const op = await mesh.runs.services.ops.start({ kind: 'countdown', title: 'count to three', input: { steps: 3, intervalMs: 400 }, steerable: true });
    expect(op.temporalWorkflowId).toMatch(/^op-countdown-[0-9a-f]{8}$/);
    const frames = subscribeResumable<{ opFrames: FrameView }, { id: string; after?: string | null }>(
      mesh.gatewayWsUrl,
      `subscription ($id: ID!, $after: String) { opFrames(opId: $id, after: $after) { ${FRAME_FIELDS} } }`,
      { id: op.id },
    );
    const first = (await frames.next()).data!.opFrames;
    expect(first.type).toBe('OP_STARTED');
    const steered = await steer(op.id, 'hello');
    expect(steered.errors).toBeUndefined();

    const done = await waitForOp(op.id, (o) => o.status !== 'RUNNING');
    expect(done).toMatchObject({ kind: 'countdown', title: 'count to three', status: 'SUCCEEDED', error: null, steerable: true, result: { counted: 3, steered: ['hello'] } });
    const logged = done.frames.edges.map((e) => e.node);
    const streamed = [first, ...(await frames.take(logged.length - 1)).map((r) => r.data!.opFrames)];
    await frames.close();
    expect(streamed).toEqual(logged);
    const summary = logged.map((f) => `${f.type}${f.line ? `:${f.line}` : ''}${f.note ? `:${f.note}` : ''}${f.fraction !== null ? `:${f.fraction.toFixed(2)}` : ''}`);
    expect(summary[0]).toBe('OP_STARTED');
    expect(summary.at(-1)).toBe('OP_SUCCEEDED');
    expect(summary.filter((s) => s.startsWith('OP_LOG:step'))).toEqual(['OP_LOG:step 1/3', 'OP_LOG:step 2/3', 'OP_LOG:step 3/3']);
    expect(summary.filter((s) => s.startsWith('OP_PROGRESS'))).toEqual(['OP_PROGRESS:0.33', 'OP_PROGRESS:0.67', 'OP_PROGRESS:1.00']);
    expect(summary.indexOf('OP_STEERED:hello')).toBeLessThan(summary.indexOf('OP_LOG:steered: hello'));

    const late = await steer(op.id, 'too late');
    expect(late.errors?.[0]).toMatchObject({ message: `op ${op.id} is SUCCEEDED; a finished op cannot be steered`, extensions: { code: 'CONFLICT' } });
    const lateCancel = await cancel(op.id);
    expect(lateCancel.errors?.[0]).toMatchObject({ message: `op ${op.id} is SUCCEEDED; a finished op cannot be cancelled`, extensions: { code: 'CONFLICT' } });
  });

  it('ends early when steered "finish"', async () => {
    const op = await mesh.runs.services.ops.start({ kind: 'countdown', input: { steps: 1000, intervalMs: 100 }, steerable: true });
    await waitForOp(op.id, (o) => o.frames.edges.some((e) => e.node.type === 'OP_LOG'));
    expect((await steer(op.id, 'finish')).errors).toBeUndefined();
    const done = await waitForOp(op.id, (o) => o.status !== 'RUNNING');
    expect(done.status).toBe('SUCCEEDED');
    expect((done.result as { counted: number }).counted).toBeLessThan(1000);
  });

  it('cancelOp aborts the running op: CANCELLED with its frame, and cancelling again returns it as it is', async () => {
    const op = await mesh.runs.services.ops.start({ kind: 'countdown', input: { steps: 1000, intervalMs: 100 } });
    await waitForOp(op.id, (o) => o.frames.edges.some((e) => e.node.type === 'OP_PROGRESS'));
    const cancelledAt = Date.now();
    expect((await cancel(op.id)).errors).toBeUndefined();
    const done = await waitForOp(op.id, (o) => o.status !== 'RUNNING');
    expect(done).toMatchObject({ status: 'CANCELLED', error: 'cancelled by request', result: null });
    // The worker wrote it, yet it names who cancelled: the executor signalled them before the cancel.
    expect(done.frames.edges.at(-1)!.node).toMatchObject({ type: 'OP_CANCELLED', error: 'cancelled by request', actor: expect.stringMatching(/^token:/) });
    const again = await cancel(op.id);
    expect(again.data?.cancelOp).toEqual({ id: op.id, status: 'CANCELLED' });
    console.log(`cancelOp → CANCELLED recorded after ${Date.now() - cancelledAt} ms (the default heartbeat timeout, 20 s)`);
  });

  it('refuses to steer an op not started as steerable, and fails an op kind no worker implements', async () => {
    const plain = await mesh.runs.services.ops.start({ kind: 'countdown', input: { steps: 1, intervalMs: 0 } });
    const refused = await steer(plain.id, 'hi');
    expect(refused.errors?.[0]).toMatchObject({ extensions: { code: 'CAPABILITY_UNSUPPORTED' } });
    const unknown = await mesh.runs.services.ops.start({ kind: 'no-such-kind' });
    const failed = await waitForOp(unknown.id, (o) => o.status !== 'RUNNING');
    expect(failed).toMatchObject({ status: 'FAILED', error: 'op kind "no-such-kind" has no implementation on this worker (known: countdown)' });
    expect(failed.frames.edges.map((e) => e.node.type)).toEqual(['OP_STARTED', 'OP_FAILED']);
  });
});
