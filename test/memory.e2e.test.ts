import type { Rule } from '@keelson/model-server';
import { workflowKinds, workflowTypes } from '@keelson/schema';
import { connectClient, searchAttributeKeys, SUMMARY_INSTRUCTION, type MemoryCompactionResult } from '@keelson/temporal';
import { ScheduleNotFoundError, type Client as TemporalClient } from '@temporalio/client';
import { Client } from 'pg';
import { gqlData } from './support/client';
import { createProject, SESSION_FIELDS, sendTurn, startHarnessMesh, waitIdle, waitTask, type HarnessMesh, type SessionData } from './support/harness';
import type { TestMesh } from './support/mesh';
import { projectWithWorkflow, startWorkflow, waitForRun } from './support/runs';
import { quietTemporalRuntime } from './support/temporalServer';

quietTemporalRuntime();

jest.setTimeout(180_000);

/** A workflow with a prompt node whose prompt renders an input and an upstream node's output. */
const ASK = `
name: ask-memory
inputs:
  topic: { required: true }
nodes:
  - { id: gather, type: bash, bash: "echo gathered-facts" }
  - id: answer
    type: prompt
    depends_on: [gather]
    prompt: "Remember {{inputs.topic}} with {{nodes.gather.output}}"
`;

/** Summaries, answered by the local model server: recognisable, and naming the range it was shown. */
const SUMMARY_RULE: Rule = {
  name: 'compaction-summary',
  match: { contains: SUMMARY_INSTRUCTION },
  reply: ({ userText }) => ({ text: `Compacted summary: the excerpt mentions ${/ZEPHYR-\d+/.exec(userText)?.[0] ?? 'nothing planted'}.` }),
};

let h: HarnessMesh;
let mesh: TestMesh;

beforeAll(async () => {
  h = await startHarnessMesh([SUMMARY_RULE]);
  mesh = h.mesh;
});
afterAll(async () => {
  const schedule = mesh?.compactionScheduleId;
  await h?.teardown();
  // A test mesh removes its compaction Schedule when it stops (meshes share the Temporal server).
  if (schedule) {
    const client = await connectClient({ address: mesh.temporal.address, namespace: mesh.temporal.namespace });
    try {
      await expect(client.schedule.getHandle(schedule).describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);
    } finally {
      await client.connection.close();
    }
  }
});

type Msg = { role: string; content: string; seq: number; sessionKey: string };

/** Polls `check` until it holds (capture is asynchronous: it follows the event log). */
async function eventually<T>(what: string, read: () => Promise<T>, check: (v: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (check(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs `fn` with a connection of its own to the mesh's database. */
async function withPg<T>(fn: (pg: Client) => Promise<T>): Promise<T> {
  const pg = new Client({ connectionString: mesh.db.url });
  await pg.connect();
  try {
    return await fn(pg);
  } finally {
    await pg.end();
  }
}

/** Resolves once both capture consumers have stored everything on their streams. */
async function captureSettled(): Promise<void> {
  const { capture, runCapture } = mesh.memory.services;
  await withPg(async (pg) => {
    const end = async (stream: string) => Number((await pg.query('SELECT COALESCE(max(last_seq), 0) AS n FROM event_streams WHERE stream = $1', [stream])).rows[0].n);
    await eventually(
      'capture to settle',
      async () => [await capture!.position(), await end('harness'), await runCapture!.position(), await end('runs')],
      ([a, b, c, d]) => a === b && c === d,
    );
  });
}

describe('memory in the mesh, through the gateway', () => {
  it('serves memory next to projects: append, search, history and the active search mode', async () => {
    const entry = { sessionId: 'claude-code:e2e-1', agent: 'agent-e2e', role: 'assistant', content: 'Moved flushTokenCache into src/lib/cache.ts', dedupeKey: 'n1' };
    const { appendMemory } = await gqlData<{ appendMemory: string }>(mesh.gatewayUrl, 'mutation ($e: MemoryEntryInput!) { appendMemory(entry: $e) }', { e: entry });
    const again = await gqlData<{ appendMemory: string }>(mesh.gatewayUrl, 'mutation ($e: MemoryEntryInput!) { appendMemory(entry: $e) }', { e: entry });
    expect(again.appendMemory).toBe(appendMemory);

    const data = await gqlData<{
      memorySearch: { messageId: string; matchedBy: string[]; conversation: { sessionKey: string } }[];
      sessionHistory: { content: string }[];
      memorySearchMode: { mode: string; reason: string };
      projects: unknown[];
    }>(
      mesh.gatewayUrl,
      `{ memorySearch(query: "TokenCache", agent: "agent-e2e") { messageId matchedBy conversation { sessionKey } }
         sessionHistory(sessionId: "claude-code:e2e-1") { content }
         memorySearchMode { mode reason }
         projects { id } }`,
    );
    expect(data.memorySearch).toEqual([{ messageId: appendMemory, matchedBy: ['TRIGRAM'], conversation: { sessionKey: 'claude-code:e2e-1' } }]);
    expect(data.sessionHistory).toEqual([{ content: entry.content }]);
    expect(data.memorySearchMode.mode).toBe('LEXICAL');
  });

  describe('capture', () => {
    let project: { id: string; rootPath: string };
    let sessionId: string;

    beforeAll(async () => {
      project = await createProject(mesh, 'memory-capture');
    });

    const historyOf = async (id: string) =>
      (
        await gqlData<{ session: { id: string; history: Msg[]; conversation: { agent: string; channel: string; taskId: string | null } | null } | null }>(
          mesh.gatewayUrl,
          'query ($id: ID!) { session(id: $id) { id history(limit: 500) { role content seq sessionKey } conversation { agent channel taskId } } }',
          { id },
        )
      ).session!;

    it("lands a real claude-code turn in memory under its SessionId, readable as session(id) { history } through the gateway", async () => {
      const started = await gqlData<{ startSession: SessionData }>(
        mesh.gatewayUrl,
        `mutation ($p: ID!) { startSession(harnessId: "claude-code", input: { projectId: $p }) { ${SESSION_FIELDS} } }`,
        { p: project.id },
      );
      sessionId = started.startSession.id;
      const text = 'remember the launch code ZEPHYR-42 for later';
      await sendTurn(mesh, sessionId, text);
      await waitIdle(mesh, sessionId, 90_000);

      const session = await eventually('the turn in memory', () => historyOf(sessionId), (s) => s.history.some((m) => m.role === 'assistant'));
      expect(session.conversation).toEqual({ agent: 'claude-code', channel: 'claude-code', taskId: null });
      expect(session.history.every((m) => m.sessionKey === sessionId)).toBe(true);
      expect(session.history.map((m) => m.seq)).toEqual(session.history.map((_, i) => i + 1));
      expect(session.history.find((m) => m.role === 'user')!.content).toContain(text);
      expect(session.history.filter((m) => m.role === 'assistant').map((m) => m.content).join('\n')).toContain(`ECHO ${text}`);

      // Memory matches what the session's own transcript holds, entry for entry.
      const { session: native } = await gqlData<{ session: { transcript: { edges: { node: { role: string; content: string } }[] } } }>(
        mesh.gatewayUrl,
        'query ($id: ID!) { session(id: $id) { transcript(first: 500) { edges { node { role content } } } } }',
        { id: sessionId },
      );
      expect(session.history.map((m) => [m.role, m.content])).toEqual(native.transcript.edges.map((e) => [e.node.role, e.node.content]));

      const { memorySearch } = await gqlData<{ memorySearch: { conversation: { sessionKey: string } }[] }>(
        mesh.gatewayUrl,
        '{ memorySearch(query: "ZEPHYR-42 launch code", agent: "claude-code") { conversation { sessionKey } } }',
      );
      expect(memorySearch.map((hit) => hit.conversation.sessionKey)).toContain(sessionId);
    });

    it('stores nothing twice when the whole harness stream is ingested again', async () => {
      await captureSettled();
      const before = await historyOf(sessionId);
      await withPg((pg) => pg.query("UPDATE event_consumer_cursors SET position = 0 WHERE consumer = 'memory-capture'"));
      await mesh.memory.services.capture!.catchUp();
      expect(await historyOf(sessionId)).toEqual(before);
    });

    it("stamps the task on a task's session: Task.history through the gateway", async () => {
      const { runTask } = await gqlData<{ runTask: { id: string } }>(
        mesh.gatewayUrl,
        'mutation ($p: ID) { runTask(harnessId: "claude-code", prompt: "note ORBIT-7 in the task log", projectId: $p) { id } }',
        { p: project.id },
      );
      const task = await waitTask(mesh, runTask.id);
      expect(task.status).toBe('SUCCEEDED');
      const read = async () =>
        (
          await gqlData<{ task: { history: { role: string; content: string }[] } }>(mesh.gatewayUrl, 'query ($id: ID!) { task(id: $id) { history { role content } } }', {
            id: runTask.id,
          })
        ).task.history;
      const history = await eventually('the task turn in memory', read, (m) => m.some((x) => x.role === 'assistant'));
      expect(history.find((m) => m.role === 'user')!.content).toContain('ORBIT-7');
      expect((await historyOf(task.session!.id)).conversation).toMatchObject({ taskId: runTask.id });
    });

    it("captures a run's prompt-node turn once: the rendered prompt and the model's answer", async () => {
      const p = await projectWithWorkflow(mesh.gatewayUrl, 'memory-runs', { 'ask.yaml': ASK });
      const run = await startWorkflow(mesh.gatewayUrl, 'ask-memory', { projectId: p.id, inputs: { topic: 'ZEPHYR-43' } });
      const done = await waitForRun(mesh.gatewayUrl, run.id, (r) => r.status !== 'RUNNING', 60_000);
      expect(done.status).toBe('SUCCEEDED');
      const read = async () =>
        (
          await gqlData<{ sessionHistory: Msg[] }>(mesh.gatewayUrl, 'query ($s: ID!) { sessionHistory(sessionId: $s) { role content seq sessionKey } }', {
            s: `run:${run.id}`,
          })
        ).sessionHistory;
      const history = await eventually('the prompt-node turn in memory', read, (m) => m.length >= 2);
      expect(history.map((m) => [m.seq, m.role, m.content])).toEqual([
        [1, 'user', 'Remember ZEPHYR-43 with gathered-facts'],
        [2, 'assistant', done.nodes.find((n) => n.id === 'answer')!.output],
      ]);
      expect(history[1]!.content).toContain('ECHO Remember ZEPHYR-43 with gathered-facts');
      const { memorySearch } = await gqlData<{ memorySearch: { conversation: { sessionKey: string; agent: string; channel: string } }[] }>(
        mesh.gatewayUrl,
        '{ memorySearch(query: "ZEPHYR-43", agent: "workflow:ask-memory") { conversation { sessionKey agent channel } } }',
      );
      expect(memorySearch[0]!.conversation).toEqual({ sessionKey: `run:${run.id}`, agent: 'workflow:ask-memory', channel: 'run' });
    });
  });

  describe('HarnessSession.history through federation', () => {
    /**
     * SQL statements the memory subgraph ran for one request. The counter is the subgraph's, so a
     * statement of its own background work (capture catching a late session event, the search mode's
     * watcher) can land inside the window and only ever adds: the fewest over three sends is the
     * request's own count (an N+1 shows in every one).
     */
    async function sqlOf<T>(url: string, query: string, variables?: Record<string, unknown>): Promise<{ statements: number; data: T }> {
      let best: { statements: number; data: T } | undefined;
      for (let i = 0; i < 3; i++) {
        await captureSettled();
        const before = mesh.memory.queryCount();
        const data = await gqlData<T>(url, query, variables);
        const statements = mesh.memory.queryCount() - before;
        if (!best || statements < best.statements) best = { statements, data };
      }
      return best!;
    }

    it('session(id) { history { content } } costs the same SQL for 10 and for 100 messages', async () => {
      const project = await createProject(mesh, 'memory-federation');
      const ids: Record<number, string> = {};
      for (const n of [10, 100]) {
        const { startSession } = await gqlData<{ startSession: { id: string } }>(
          mesh.gatewayUrl,
          'mutation ($p: ID!) { startSession(harnessId: "claude-code", input: { projectId: $p }) { id } }',
          { p: project.id },
        );
        ids[n] = startSession.id;
        await mesh.memory.services.memory.appendMany(
          Array.from({ length: n }, (_, i) => ({
            sessionId: startSession.id,
            agent: 'claude-code',
            role: 'assistant',
            content: `message ${i + 1} of ${n}`,
            dedupeKey: `m${i}`,
            createdAt: new Date(Date.UTC(2025, 0, 1, 0, i)),
          })),
        );
      }
      type One = { session: { history: { content: string }[] } };
      const Q = 'query ($id: ID!) { session(id: $id) { history(limit: 500) { content } } }';
      const ten = await sqlOf<One>(mesh.gatewayUrl, Q, { id: ids[10] });
      const hundred = await sqlOf<One>(mesh.gatewayUrl, Q, { id: ids[100] });
      expect(ten.data.session.history).toHaveLength(10);
      expect(hundred.data.session.history).toHaveLength(100);
      expect(hundred.data.session.history.at(-1)).toEqual({ content: 'message 100 of 100' });
      expect({ ten: ten.statements, hundred: hundred.statements }).toEqual({ ten: 1, hundred: 1 });
    });
  });

  describe('compaction, scheduled by Temporal', () => {
    let temporal: TemporalClient;
    const sessionKey = 'claude-code:compaction-long';

    beforeAll(async () => {
      temporal = await connectClient({ address: mesh.temporal.address, namespace: mesh.temporal.namespace });
    });
    afterAll(async () => {
      await temporal?.connection.close();
    });

    /** 120 messages in one conversation: two full windows of 50 (one plants ZEPHYR-99, one ZEPHYR-77) and 20 over. */
    const append = (from: number, to: number) =>
      mesh.memory.services.memory.appendMany(
        Array.from({ length: to - from + 1 }, (_, i) => {
          const n = from + i;
          const planted = n === 7 ? ' the deploy key is ZEPHYR-99' : n === 77 ? ' the rollback key is ZEPHYR-77' : n === 130 ? ' the backup key is ZEPHYR-130' : '';
          return { sessionId: sessionKey, agent: 'claude-code', role: n % 2 ? 'user' : 'assistant', content: `step ${n} of the long task.${planted}`, dedupeKey: `long-${n}` };
        }),
      );

    const summaryRequests = () => h.model.requests().filter((r) => (r.userText ?? '').startsWith(SUMMARY_INSTRUCTION)).length;

    const summariesOf = async () => {
      const [conversation] = (await mesh.memory.services.history.conversationsOfSessions([sessionKey])) as { id: string }[];
      const { conversation: c } = await gqlData<{ conversation: { summaries: { fromSeq: number; toSeq: number; content: string; model: string | null }[] } }>(
        mesh.gatewayUrl,
        'query ($id: ID!) { conversation(id: $id) { summaries { fromSeq toSeq content model } } }',
        { id: conversation!.id },
      );
      return c.summaries;
    };

    /** Runs one pass now, as the Schedule would, and returns its result. */
    const pass = (id: string) =>
      temporal.workflow.execute(workflowTypes.memoryCompaction, {
        taskQueue: mesh.env.TEMPORAL_TASK_QUEUE,
        workflowId: id,
        args: [{ window: 50 }],
        typedSearchAttributes: [{ key: searchAttributeKeys.kind, value: workflowKinds.compaction }],
      }) as Promise<MemoryCompactionResult>;

    it('keeps a Schedule that starts compaction passes findable as KeelsonKind=compaction; a pass summarises each full window once through the provider registry', async () => {
      await append(1, 120);
      const schedule = temporal.schedule.getHandle(mesh.compactionScheduleId!);
      const described = await schedule.describe();
      expect(described.action).toMatchObject({ type: 'startWorkflow', workflowType: 'memoryCompaction', taskQueue: mesh.env.TEMPORAL_TASK_QUEUE });
      expect(described.typedSearchAttributes.get(searchAttributeKeys.kind)).toBe('compaction');
      expect(described.spec.intervals).toMatchObject([{ every: mesh.env.KEELSON_MEMORY_COMPACTION_INTERVAL_MS }]);

      // The Schedule's pass, started now (its interval is 15 minutes), found by its search attribute.
      await schedule.trigger();
      const query = `${'KeelsonKind'} = 'compaction' AND TaskQueue = '${mesh.env.TEMPORAL_TASK_QUEUE}'`;
      const [execution] = await eventually(
        'the scheduled pass in visibility',
        async () => {
          const found = [];
          for await (const w of temporal.workflow.list({ query })) found.push(w);
          return found;
        },
        (found) => found.length > 0,
        60_000,
      );
      expect(execution!.type).toBe('memoryCompaction');
      const result = (await temporal.workflow.getHandle(execution!.workflowId, execution!.runId).result()) as MemoryCompactionResult;
      expect(result.written).toBeGreaterThanOrEqual(2);

      const summaries = await summariesOf();
      expect(summaries.map((s) => [s.fromSeq, s.toSeq])).toEqual([
        [1, 50],
        [51, 100],
      ]);
      expect(summaries.map((s) => s.content)).toEqual(['Compacted summary: the excerpt mentions ZEPHYR-99.', 'Compacted summary: the excerpt mentions ZEPHYR-77.']);
      expect(summaries[0]!.model).toBeTruthy();

      // Summaries are searchable.
      const { memorySearch } = await gqlData<{ memorySearch: { kind: string; content: string; summary: { fromSeq: number } | null; conversation: { sessionKey: string } }[] }>(
        mesh.gatewayUrl,
        '{ memorySearch(query: "compacted summary ZEPHYR-77", scope: SUMMARIES, agent: "claude-code") { kind content summary { fromSeq } conversation { sessionKey } } }',
      );
      expect(memorySearch[0]).toMatchObject({ kind: 'SUMMARY', summary: { fromSeq: 51 }, conversation: { sessionKey } });
    });

    it('is idempotent per range: a pass with nothing new calls no model, and racing passes store one summary per range', async () => {
      const calls = summaryRequests();
      await expect(pass(`compaction-idle-${Date.now()}`)).resolves.toEqual({ ranges: 0, written: 0, existing: 0 });
      expect(summaryRequests()).toBe(calls);

      await append(121, 150);
      const [a, b] = await Promise.all([pass(`compaction-a-${Date.now()}`), pass(`compaction-b-${Date.now()}`)]);
      expect(a.ranges + b.ranges).toBeGreaterThanOrEqual(1);
      const summaries = await summariesOf();
      expect(summaries.map((s) => [s.fromSeq, s.toSeq])).toEqual([
        [1, 50],
        [51, 100],
        [101, 150],
      ]);
      expect(summaries[2]!.content).toBe('Compacted summary: the excerpt mentions ZEPHYR-130.');
    });
  });
});
