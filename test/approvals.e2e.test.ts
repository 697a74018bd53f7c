import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { startModelServer, type ModelServer } from '@keelson/model-server';
import type { Rib, ToolDefinition } from '@keelson/ribs-contract';
import { z } from 'zod';
import { gql, gqlData, subscribe, type Subscription } from './support/client';
import { codes, SESSION_FIELDS, subscribeEvents, takeUntil, turnCompleted } from './support/harness';
import { startTestMesh, type TestMesh } from './support/mesh';
import { getRun, projectWithWorkflow, respond, startWorkflow, waitForRun } from './support/runs';
import { quietTemporalRuntime } from './support/temporalServer';
import { until } from './support/until';

quietTemporalRuntime();
jest.setTimeout(180_000);

/** Labels `stamp_mark` really stamped (the worker's rib host runs in this process). */
const stamped: string[] = [];

const stampRib: Rib = {
  id: 'stamp',
  displayName: 'Stamp',
  registerTools: () => [
    {
      name: 'stamp_mark',
      description: 'Stamp a label.',
      inputSchema: z.strictObject({ label: z.string().min(1) }),
      state_changing: true,
      execute(input: { label: string }, ctx) {
        stamped.push(input.label);
        ctx.emit({ type: 'tool_result', toolUseId: '', content: `stamped ${input.label}` });
      },
    } as ToolDefinition,
  ],
  contributePolicies: () => [
    { id: 'ask-before-stamp', on: [{ phase: 'tool_call', tool: 'stamp_mark' }], evaluate: () => ({ outcome: 'ask', reason: 'stamping needs a human' }) },
  ],
};

const GATED = `
name: inbox-gated
nodes:
  - id: gate
    type: approval
    prompt: Ship the inbox build?
  - id: ship
    type: bash
    depends_on: [gate]
    bash: echo shipped
`;

const STAMPED = `
name: inbox-stamp
nodes:
  - id: mark
    type: prompt
    allowed_tools: [stamp_mark]
    prompt: 'CALL_TOOL stamp_mark {"label": "inbox"}'
`;

const APPROVAL_FIELDS = 'id kind status question detail answeredBy answer decision closedAt closeReason run { id } session { id } project { id }';

interface ApprovalView {
  id: string;
  kind: string;
  status: string;
  question: string;
  detail: Record<string, unknown> | null;
  answeredBy: string | null;
  answer: string | null;
  decision: string | null;
  closeReason: string | null;
  run: { id: string } | null;
  session: { id: string } | null;
  project: { id: string } | null;
}

interface ApprovalEventView {
  cursor: string;
  type: string;
  approvalId: string;
  kind: string;
  status: string;
  actor: string | null;
  approval: { id: string; status: string };
}

async function inbox(url: string, status?: string): Promise<ApprovalView[]> {
  const data = await gqlData<{ approvals: { edges: { node: ApprovalView }[]; pageInfo: { hasNextPage: boolean } } }>(
    url,
    `query ($s: String) { approvals(status: $s, first: 100) { edges { cursor node { ${APPROVAL_FIELDS} } } pageInfo { hasNextPage endCursor } } }`,
    { s: status ?? null },
  );
  return data.approvals.edges.map((e) => e.node);
}

function answer(url: string, id: string, decision: 'APPROVE' | 'DENY', text?: string) {
  return gql<{ answerApproval: ApprovalView }>(
    url,
    `mutation ($id: ID!, $d: ApprovalDecision!, $t: String) { answerApproval(id: $id, decision: $d, text: $t) { ${APPROVAL_FIELDS} } }`,
    { id, d: decision, t: text ?? null },
  );
}

async function events(sub: Subscription<{ approvalEvents: ApprovalEventView }>, n: number): Promise<ApprovalEventView[]> {
  return (await sub.take(n, 60_000)).map((r) => {
    if (r.errors?.length || !r.data) throw new Error(`approvalEvents: ${JSON.stringify(r.errors)}`);
    return r.data.approvalEvents;
  });
}

describe('one approval inbox across a run gate, a policy ask and a claude-code tool approval, through the gateway', () => {
  let model: ModelServer;
  let mesh: TestMesh;
  let bin: string;
  let url: string;

  beforeAll(async () => {
    bin = await mkdtemp(join(tmpdir(), 'keelson-inbox-bin-'));
    model = await startModelServer({
      rules: [
        {
          name: 'retry-approved-bash',
          match: { contains: 'The user approved your Bash call' },
          reply: (ctx) => {
            const command = /"command":"([^"]+)"/.exec(ctx.userText)?.[1];
            return command ? [{ toolCall: { name: 'Bash', arguments: { command, description: 'retry' } } }] : undefined;
          },
        },
      ],
    });
    mesh = await startTestMesh(
      {
        KEELSON_MODEL_BASE_URL: model.url,
        KEELSON_MODEL_API_KEY: 'keelson-test',
        KEELSON_CAPABILITY_POLL_MS: '250',
        PATH: `${bin}${delimiter}${process.env.PATH ?? ''}`,
      },
      { ribHost: { available: { stamp: stampRib } } },
    );
    url = mesh.gatewayUrl;
  });

  afterAll(async () => {
    await mesh?.teardown();
    await model?.stop();
    if (bin) await rm(bin, { recursive: true, force: true });
  });

  it('opens, lists, answers through answerApproval (the work continues), and refuses a second answer', async () => {
    const { viewer } = await gqlData<{ viewer: { subject: string } }>(url, '{ viewer { subject } }');
    const sub = subscribe<{ approvalEvents: ApprovalEventView }>(
      mesh.gatewayWsUrl,
      'subscription ($a: String) { approvalEvents(after: $a) { cursor type approvalId kind status actor approval { id status } } }',
      { a: null },
    );

    // A run gate.
    const project = await projectWithWorkflow(url, 'inbox', { 'inbox-gated.yaml': GATED, 'inbox-stamp.yaml': STAMPED });
    const gated = await startWorkflow(url, 'inbox-gated', { projectId: project.id });
    await waitForRun(url, gated.id, (r) => r.status === 'PAUSED');
    // A policy ask (a prompt node's tool, asked through the worker's rib host).
    const stampRun = await startWorkflow(url, 'inbox-stamp', { projectId: project.id });
    // A claude-code tool approval: the CLI asks before Bash runs, and its turn waits for the answer.
    const { startSession } = await gqlData<{ startSession: { id: string } }>(
      url,
      `mutation ($p: ID!) { startSession(harnessId: "claude-code", input: { projectId: $p }) { ${SESSION_FIELDS} } }`,
      { p: project.id },
    );
    const sessionId = startSession.id;
    const harness = subscribeEvents(mesh, { sessionId });
    const command = `curl -s ${model.url}/_keelson/health`;
    await gqlData(url, 'mutation ($s: ID!, $t: String!) { sendUserTurn(sessionId: $s, text: $t) { turnId } }', {
      s: sessionId,
      t: `CALL_TOOL Bash {"command":"${command}","description":"probe"}`,
    });

    // Listed: three open approvals, one of each kind, each naming what it belongs to.
    const open = await until('three open approvals', () => inbox(url, 'OPEN'), (a) => a.length === 3, 60_000);
    const byKind = Object.fromEntries(open.map((a) => [a.kind, a]));
    expect(Object.keys(byKind).sort()).toEqual(['HARNESS_TOOL', 'POLICY_ASK', 'RUN_GATE']);
    expect(byKind.RUN_GATE).toMatchObject({ question: 'Ship the inbox build?', run: { id: gated.id }, project: { id: project.id }, session: null });
    expect(byKind.POLICY_ASK!.question).toMatch(/^Policy stamp:ask-before-stamp asks before a caller uses tool 'stamp_mark'/);
    expect(byKind.POLICY_ASK!.run).not.toBeNull();
    expect(byKind.HARNESS_TOOL).toMatchObject({ session: { id: sessionId }, project: { id: project.id }, detail: { toolName: 'Bash', input: { command } } });
    expect(byKind.HARNESS_TOOL!.question).toMatch(/^claude-code asks to use Bash/);
    expect(stamped).toEqual([]);
    // Paged like every connection.
    const firstPage = await gqlData<{ approvals: { edges: { cursor: string }[]; pageInfo: { hasNextPage: boolean; endCursor: string } } }>(
      url,
      '{ approvals(status: "OPEN", first: 2) { edges { cursor } pageInfo { hasNextPage endCursor } } }',
    );
    expect(firstPage.approvals.pageInfo.hasNextPage).toBe(true);
    const rest = await gqlData<{ approvals: { edges: { node: { id: string } }[] } }>(url, 'query ($a: String) { approvals(status: "OPEN", first: 2, after: $a) { edges { node { id } } } }', {
      a: firstPage.approvals.pageInfo.endCursor,
    });
    expect(rest.approvals.edges.map((e) => e.node.id)).toEqual([open[2]!.id]);

    // Answered through the one door; each kind's work continues.
    const runGate = await answer(url, byKind.RUN_GATE!.id, 'APPROVE');
    expect(runGate.errors).toBeUndefined();
    expect(runGate.data!.answerApproval).toMatchObject({ status: 'ANSWERED', decision: 'APPROVE', answer: 'approve', answeredBy: viewer.subject });
    const shipped = await waitForRun(url, gated.id, (r) => r.status === 'SUCCEEDED' || r.status === 'FAILED');
    expect(shipped.nodes.map((n) => [n.id, n.status])).toEqual([
      ['gate', 'SUCCEEDED'],
      ['ship', 'SUCCEEDED'],
    ]);

    const ask = await answer(url, byKind.POLICY_ASK!.id, 'APPROVE');
    expect(ask.data?.answerApproval).toMatchObject({ status: 'ANSWERED', answeredBy: viewer.subject });
    const stampDone = await waitForRun(url, stampRun.id, (r) => r.status === 'SUCCEEDED' || r.status === 'FAILED', 60_000);
    expect(stampDone.nodes.find((n) => n.id === 'mark')!.output).toBe('DONE stamp_mark: stamped inbox');
    expect(stamped).toEqual(['inbox']);

    const tool = await answer(url, byKind.HARNESS_TOOL!.id, 'APPROVE');
    expect(tool.data?.answerApproval).toMatchObject({ status: 'ANSWERED', decision: 'APPROVE', answeredBy: viewer.subject });
    // The same turn goes on: the tool runs once approved.
    const turn = await takeUntil(harness, turnCompleted);
    expect(turn.find((e) => e.__typename === 'ApprovalResolved')).toMatchObject({ decision: 'APPROVE' });
    expect(turn.filter((e) => e.__typename === 'ToolResult')).toEqual([expect.objectContaining({ isError: false })]);
    expect(turn.at(-1)).toMatchObject({ status: 'COMPLETED' });

    // A second answer, through either door, is CONFLICT with the reason.
    for (const a of open) {
      const again = await answer(url, a.id, 'DENY', 'too late');
      expect(codes(again)).toEqual(['CONFLICT']);
      expect(again.errors![0]!.message).toContain(`approval ${a.id} (${a.kind}) was already answered (APPROVE by ${viewer.subject}`);
    }
    const viaOld = await gql(url, 'mutation ($s: ID!, $r: ID!) { resolveApproval(sessionId: $s, requestId: $r, decision: DENY) }', {
      s: sessionId,
      r: (byKind.HARNESS_TOOL!.detail as { requestId: string }).requestId,
    });
    expect(codes(viaOld)).toEqual(['CONFLICT']);
    expect(codes(await answer(url, '00000000-0000-4000-8000-000000000000', 'APPROVE'))).toEqual(['NOT_FOUND']);

    // Streamed: three opened, three answered (the answerer as actor); nothing else.
    const seen = await events(sub, 6);
    expect(seen.filter((e) => e.type === 'APPROVAL_OPENED').map((e) => e.approvalId).sort()).toEqual(open.map((a) => a.id).sort());
    expect(seen.filter((e) => e.type === 'APPROVAL_ANSWERED').map((e) => [e.kind, e.actor])).toEqual([
      ['RUN_GATE', viewer.subject],
      ['POLICY_ASK', viewer.subject],
      ['HARNESS_TOOL', viewer.subject],
    ]);
    expect(await inbox(url, 'OPEN')).toEqual([]);

    // Resumable: from the third event's cursor, exactly the three that followed.
    const resumed = subscribe<{ approvalEvents: ApprovalEventView }>(
      mesh.gatewayWsUrl,
      'subscription ($a: String) { approvalEvents(after: $a) { cursor type approvalId kind status actor approval { id status } } }',
      { a: seen[2]!.cursor },
    );
    expect((await events(resumed, 3)).map((e) => e.cursor)).toEqual(seen.slice(3).map((e) => e.cursor));
    await resumed.close();
    await sub.close();
    await harness.close();
  });

  it('respondToRun keeps working and writes the same row; a cancelled run cancels its gate', async () => {
    const project = await projectWithWorkflow(url, 'inbox-old-door', { 'inbox-gated.yaml': GATED });
    const first = await startWorkflow(url, 'inbox-gated', { projectId: project.id });
    const paused = await waitForRun(url, first.id, (r) => r.status === 'PAUSED');
    const row = await until('its approval', async () => (await inbox(url, 'OPEN')).find((a) => a.run?.id === first.id), Boolean);
    await expect(respond(url, first.id, 'gate', 'not yet: fix the docs', paused.pendingApproval!.pauseId)).resolves.toMatchObject({ ok: true });
    const answered = (await inbox(url, 'ANSWERED')).find((a) => a.id === row!.id);
    expect(answered).toMatchObject({ decision: 'DENY', answer: 'not yet: fix the docs' });
    expect(codes(await answer(url, row!.id, 'APPROVE'))).toEqual(['CONFLICT']);

    const second = await startWorkflow(url, 'inbox-gated', { projectId: project.id });
    await waitForRun(url, second.id, (r) => r.status === 'PAUSED');
    const gate = await until('its approval', async () => (await inbox(url, 'OPEN')).find((a) => a.run?.id === second.id), Boolean);
    await gqlData(url, 'mutation ($r: ID!) { cancelRun(runId: $r) { ok } }', { r: second.id });
    await waitForRun(url, second.id, (r) => r.status === 'CANCELLED');
    const cancelled = (await inbox(url, 'CANCELLED')).find((a) => a.id === gate!.id);
    expect(cancelled).toMatchObject({ closeReason: 'the run cancelled' });
    const late = await answer(url, gate!.id, 'APPROVE');
    expect(codes(late)).toEqual(['CONFLICT']);
    expect(late.errors![0]!.message).toMatch(/was cancelled at .* \(the run cancelled\); nothing waits for an answer any more/);
    expect((await getRun(url, second.id)).status).toBe('CANCELLED');
  });

  it('capabilitiesChanged reports a harness CLI that appears on PATH, and resumes from a cursor', async () => {
    const query = 'subscription ($a: String) { capabilitiesChanged(after: $a) { cursor source id available previous state reason } }';
    type Change = { cursor: string; source: string; id: string; available: boolean; previous: boolean | null; state: Record<string, unknown>; reason: string | null };
    const sub = subscribe<{ capabilitiesChanged: Change }>(mesh.gatewayWsUrl, query, { a: null });
    const take = async (s: Subscription<{ capabilitiesChanged: Change }>, done: (c: Change) => boolean) => {
      const out: Change[] = [];
      for (;;) {
        const r = await s.next(30_000);
        if (r.errors?.length || !r.data) throw new Error(JSON.stringify(r.errors));
        out.push(r.data.capabilitiesChanged);
        if (done(out.at(-1)!)) return out;
      }
    };
    // The first observation of hermes: not installed.
    const before = await take(sub, (c) => c.source === 'HARNESS' && c.id === 'hermes');
    expect(before.at(-1)).toMatchObject({ available: false, previous: null, state: { installed: false } });

    const hermes = join(bin, 'hermes');
    await writeFile(hermes, '#!/bin/sh\necho hermes 0.0.1\n');
    await chmod(hermes, 0o755);
    const after = await take(sub, (c) => c.id === 'hermes');
    expect(after.at(-1)).toMatchObject({ source: 'HARNESS', id: 'hermes', available: true, previous: false, state: { installed: true } });
    // The read field agrees: one truth.
    const { harness } = await gqlData<{ harness: { installed: boolean } }>(url, '{ harness(id: "hermes") { installed } }');
    expect(harness.installed).toBe(true);

    await rm(hermes);
    const removed = await take(sub, (c) => c.id === 'hermes');
    expect(removed.at(-1)).toMatchObject({ available: false, previous: true });
    await sub.close();

    // Resumed after the appearance: the removal next, nothing repeated.
    const resumed = subscribe<{ capabilitiesChanged: Change }>(mesh.gatewayWsUrl, query, { a: after.at(-1)!.cursor });
    const next = await take(resumed, (c) => c.id === 'hermes');
    expect(next.map((c) => c.cursor)).toContain(removed.at(-1)!.cursor);
    expect(next.some((c) => c.cursor === after.at(-1)!.cursor)).toBe(false);
    await resumed.close();

    // The other owners say theirs on the same stream: the stamp rib is active, memory search has a mode.
    const all = subscribe<{ capabilitiesChanged: Change }>(mesh.gatewayWsUrl, query, { a: null });
    const seen: Change[] = [];
    await take(all, (c) => {
      seen.push(c);
      return seen.some((x) => x.source === 'RIB' && x.id === 'stamp') && seen.some((x) => x.source === 'MEMORY_SEARCH');
    });
    expect(seen.find((x) => x.source === 'RIB' && x.id === 'stamp')).toMatchObject({ available: true, previous: null, state: { active: true } });
    expect(seen.find((x) => x.source === 'MEMORY_SEARCH')).toMatchObject({ id: 'search', state: { mode: expect.stringMatching(/^(HYBRID|LEXICAL)$/) } });
    await all.close();
  });
});
