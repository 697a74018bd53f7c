import { expectData, startMemoryHarness, type MemoryHarness } from '../../test/support/memoryHarness';
import type { CapturedRun, RunCaptureConsumer, RunTurnSource, TranscriptSource } from '../index';

jest.setTimeout(60_000);

/** Plays the runs subgraph: runs by id. */
class Runs implements RunTurnSource {
  readonly byId = new Map<string, CapturedRun>();
  fetches = 0;
  async runs(ids: readonly string[]): Promise<CapturedRun[]> {
    this.fetches += 1;
    return ids.flatMap((id) => (this.byId.has(id) ? [this.byId.get(id)!] : []));
  }
}

const noTranscripts: TranscriptSource = { entries: async () => [] };
const RUN = '0b7e3c9a-1d2f-4a5b-8c6d-7e8f9a0b1c2d';

function run(): CapturedRun {
  return {
    id: RUN,
    workflowName: 'triage',
    ribId: null,
    projectId: null,
    nodes: [
      { id: 'collect', type: 'bash', status: 'SUCCEEDED', output: '  3 failing tests\n', prompt: null, startedAt: '2025-07-01T10:00:00Z', completedAt: '2025-07-01T10:00:01Z' },
      {
        id: 'judge',
        type: 'prompt',
        status: 'SUCCEEDED',
        output: 'Severity: high.',
        // As the worker recorded it: rendered from 'Triage {{inputs.issue}} from {{nodes.collect.output}}; notes in $ARTIFACTS_DIR/n.md'.
        prompt: 'Triage #42 from 3 failing tests; notes in /tmp/runs/x/artifacts/n.md',
        startedAt: '2025-07-01T10:00:02Z',
        completedAt: '2025-07-01T10:00:05Z',
      },
      { id: 'legacy', type: 'prompt', status: 'SUCCEEDED', output: 'From before prompts were recorded.', prompt: null, startedAt: null, completedAt: '2025-07-01T10:00:06Z' },
    ],
  };
}

let h: MemoryHarness;
const runs = new Runs();
const consumer = (): RunCaptureConsumer => h.running.services.runCapture!;

beforeAll(async () => {
  h = await startMemoryHarness({ capture: { source: noTranscripts, runs, autoStart: false } });
});
afterAll(() => h?.close());

describe('capture from the runs stream', () => {
  it("stores a prompt node's turn once as its recorded prompt and the answer; other nodes, unknown runs and malformed events store nothing", async () => {
    runs.byId.set(RUN, run());
    await h.emitRun('RUN_STARTED', RUN, { launch: 1 });
    await h.emitRun('NODE_SUCCEEDED', RUN, { launch: 1, nodeId: 'collect', exitCode: 0 });
    await h.emitRun('NODE_SUCCEEDED', RUN, { launch: 1, nodeId: 'judge', exitCode: null });
    await h.emitRun('NODE_SUCCEEDED', '9f9f9f9f-0000-4000-8000-000000000000', { launch: 1, nodeId: 'judge' });
    await h.emitRun('NODE_SUCCEEDED', RUN, { launch: 1 }); // malformed: no nodeId
    await consumer().catchUp();

    const Q = `{ sessionHistory(sessionId: "run:${RUN}") { seq role content createdAt metadata } }`;
    const expected = [
      {
        seq: 1,
        role: 'user',
        content: 'Triage #42 from 3 failing tests; notes in /tmp/runs/x/artifacts/n.md',
        createdAt: '2025-07-01T10:00:02.000Z',
        metadata: { kind: 'prompt-node', runId: RUN, nodeId: 'judge', workflowName: 'triage', launch: 1 },
      },
      {
        seq: 2,
        role: 'assistant',
        content: 'Severity: high.',
        createdAt: '2025-07-01T10:00:05.000Z',
        metadata: { kind: 'prompt-node', runId: RUN, nodeId: 'judge', workflowName: 'triage', launch: 1 },
      },
    ];
    expect(expectData(await h.gql<{ sessionHistory: unknown[] }>(Q)).sessionHistory).toEqual(expected);
    expect(await h.sql('SELECT agent, channel, metadata FROM memory_conversations WHERE session_key = $1', [`run:${RUN}`])).toEqual([
      { agent: 'workflow:triage', channel: 'run', metadata: { runId: RUN, workflowName: 'triage', ribId: null, projectId: null } },
    ]);

    // The whole stream again (and the event announced twice): nothing new.
    await h.emitRun('NODE_SUCCEEDED', RUN, { launch: 1, nodeId: 'judge', exitCode: null });
    await h.sql("UPDATE event_consumer_cursors SET position = 0 WHERE consumer = 'memory-run-capture'");
    await consumer().catchUp();
    expect(expectData(await h.gql<{ sessionHistory: unknown[] }>(Q)).sessionHistory).toEqual(expected);
  });

  it('reads the runs of a batch in one fetch, and skips events of no interest without one', async () => {
    const before = runs.fetches;
    for (const type of ['RUN_STARTED', 'NODE_STARTED', 'RUN_SUCCEEDED']) await h.emitRun(type, RUN, { launch: 1, nodeId: 'judge' });
    await consumer().catchUp();
    expect(runs.fetches).toBe(before);
    for (let i = 0; i < 3; i++) await h.emitRun('NODE_SUCCEEDED', RUN, { launch: 1, nodeId: 'judge' });
    await consumer().catchUp();
    expect(runs.fetches).toBe(before + 1);
  });

  it('stores only the answer of a prompt node that has no recorded prompt', async () => {
    await h.emitRun('NODE_SUCCEEDED', RUN, { launch: 1, nodeId: 'legacy', exitCode: null });
    await consumer().catchUp();
    const { sessionHistory } = expectData(await h.gql<{ sessionHistory: { role: string; content: string; metadata: { nodeId: string } }[] }>(
      `{ sessionHistory(sessionId: "run:${RUN}") { role content metadata } }`,
    ));
    expect(sessionHistory.filter((m) => m.metadata.nodeId === 'legacy')).toEqual([
      { role: 'assistant', content: 'From before prompts were recorded.', metadata: expect.objectContaining({ nodeId: 'legacy' }) },
    ]);
  });
});
