import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { gql, gqlData } from '../support/client';
import { codes, createProject, sendTurn, startHarnessMesh, subscribeEvents, takeUntil, turnCompleted, waitIdle, type HarnessMesh } from '../support/harness';
import { until } from '../support/until';

jest.setTimeout(180_000);

// Seed 002's approvals "on the wire for clients to resolve", before the tool runs: claude-code asks
// its permission hook (`--permission-prompt-tool`, the sessions service's permission endpoint) about a
// tool it may not use; the turn waits there until answerApproval answers — APPROVE runs the tool in
// the same turn, DENY keeps it from running.

let h: HarnessMesh;
let project: { id: string; rootPath: string };
beforeAll(async () => {
  h = await startHarnessMesh();
  project = await createProject(h.mesh, 'before-tool');
});
afterAll(() => h?.teardown());

interface InboxItem {
  id: string;
  kind: string;
  status: string;
  decision: string | null;
  question: string;
  detail: { requestId?: string; toolName?: string; input?: { command?: string } } | null;
  session: { id: string } | null;
}

const inbox = async (sessionId: string): Promise<InboxItem[]> =>
  (
    await gqlData<{ approvals: { edges: { node: InboxItem }[] } }>(h.mesh.gatewayUrl, '{ approvals(first: 200) { edges { node { id kind status decision question detail session { id } } } } }')
  ).approvals.edges
    .map((e) => e.node)
    .filter((a) => a.session?.id === sessionId);

const answer = (id: string, decision: 'APPROVE' | 'DENY') =>
  gql(h.mesh.gatewayUrl, 'mutation ($id: ID!, $d: ApprovalDecision!) { answerApproval(id: $id, decision: $d) { id status } }', { id, d: decision });

async function askedSession(file: string): Promise<{ sessionId: string; approval: InboxItem; sub: ReturnType<typeof subscribeEvents> }> {
  const { startSession } = await gqlData<{ startSession: { id: string } }>(h.mesh.gatewayUrl, 'mutation ($p: ID!) { startSession(harnessId: "claude-code", input: { projectId: $p }) { id } }', {
    p: project.id,
  });
  const sessionId = startSession.id;
  const sub = subscribeEvents(h.mesh, { sessionId });
  // curl is a command claude-code's acceptEdits mode does not allow by itself: it asks.
  await sendTurn(h.mesh, sessionId, `CALL_TOOL Bash {"command":"curl -s ${h.model.url}/_keelson/health -o ${file}","description":"fetch a file"}`);
  const [approval] = await until('the tool asked before it runs', () => inbox(sessionId), (a) => a.some((x) => x.status === 'OPEN'), 90_000);
  return { sessionId, approval: approval!, sub };
}

describe('approvals before the tool runs (claude-code)', () => {
  it('says which harnesses have it, with the reason where not', async () => {
    const { harnesses } = await gqlData<{ harnesses: { id: string; capabilities: { approvalsBeforeTool: boolean; reasons: { capability: string; reason: string }[] } }[] }>(
      h.mesh.gatewayUrl,
      '{ harnesses { id capabilities { approvalsBeforeTool reasons { capability reason } } } }',
    );
    const byId = Object.fromEntries(harnesses.map((x) => [x.id, x.capabilities]));
    expect(byId['claude-code']!.approvalsBeforeTool).toBe(true);
    expect(byId['qwen-code']!.approvalsBeforeTool).toBe(false);
    expect(byId['qwen-code']!.reasons.find((r) => r.capability === 'approvalsBeforeTool')!.reason).toMatch(/no permission hook headless/);
  });

  it('holds the turn in the hook until APPROVE, then the tool runs in the same turn', async () => {
    const { sessionId, approval, sub } = await askedSession('approved.txt');
    expect(approval).toMatchObject({ kind: 'HARNESS_TOOL', detail: { toolName: 'Bash', input: { command: `curl -s ${h.model.url}/_keelson/health -o approved.txt` } } });
    expect(approval.detail!.requestId).toMatch(/^live:/);
    // The turn waits in the hook: it is in flight, and the tool has not run.
    const { session } = await gqlData<{ session: { turnInFlight: boolean } }>(h.mesh.gatewayUrl, 'query ($s: ID!) { session(id: $s) { turnInFlight } }', { s: sessionId });
    expect(session.turnInFlight).toBe(true);
    expect(existsSync(join(project.rootPath, 'approved.txt'))).toBe(false);

    expect((await answer(approval.id, 'APPROVE')).errors).toBeUndefined();
    const events = await takeUntil(sub, turnCompleted, 90_000);
    expect(events.at(-1)).toMatchObject({ __typename: 'TurnComplete', status: 'COMPLETED' });
    expect(existsSync(join(project.rootPath, 'approved.txt'))).toBe(true);
    // One turn, one approval: nothing is asked again after the fact.
    await waitIdle(h.mesh, sessionId);
    expect((await inbox(sessionId)).map((a) => [a.status, a.decision])).toEqual([['ANSWERED', 'APPROVE']]);
    await sub.close();
  });

  it('keeps a denied tool from running, and the turn goes on without it', async () => {
    const { sessionId, approval, sub } = await askedSession('denied.txt');
    expect((await answer(approval.id, 'DENY')).errors).toBeUndefined();
    const events = await takeUntil(sub, turnCompleted, 90_000);
    expect(events.at(-1)).toMatchObject({ __typename: 'TurnComplete' });
    await waitIdle(h.mesh, sessionId);
    expect(existsSync(join(project.rootPath, 'denied.txt'))).toBe(false);
    expect((await inbox(sessionId)).map((a) => [a.status, a.decision])).toEqual([['ANSWERED', 'DENY']]);
    // Answered once: a second answer is refused.
    expect(codes(await answer(approval.id, 'APPROVE'))).toEqual(['CONFLICT']);
    await sub.close();
  });
});
