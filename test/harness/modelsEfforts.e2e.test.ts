import { gql, gqlData } from '../support/client';
import { codes, createProject, sendTurn, startHarnessMesh, waitIdle, type HarnessMesh } from '../support/harness';

jest.setTimeout(180_000);

// Seed 002's drivers table: models and efforts per harness. Harness.models / Harness.efforts, and
// `model` / `effort` on startSession (the session's default) and sendUserTurn (this turn's), reaching
// the real CLI (claude-code against the local model server) as its own flags.

let h: HarnessMesh;
let projectId: string;
beforeAll(async () => {
  h = await startHarnessMesh();
  projectId = (await createProject(h.mesh, 'choices')).id;
});
afterAll(() => h?.teardown());

const START = 'mutation ($h: ID!, $i: StartSessionInput) { startSession(harnessId: $h, input: $i) { id } }';
const SEND = 'mutation ($s: ID!, $t: String!, $m: String, $e: String) { sendUserTurn(sessionId: $s, text: $t, model: $m, effort: $e) { turnId } }';

/** The effort a request carried (claude-code sends `--effort` as its output effort), if any. */
const effortOf = (body: Record<string, unknown>) => /"effort":"(\w+)"/.exec(JSON.stringify(body))?.[1];

/** The model calls claude-code made since `since` (its side requests, such as titles, left out). */
function modelCalls(since: number): { model: unknown; body: Record<string, unknown> }[] {
  return h.model
    .requests(since)
    .filter((r) => r.api === 'anthropic' && !r.side)
    .map((r) => ({ model: (r.body as Record<string, unknown>).model, body: r.body as Record<string, unknown> }));
}

describe('models and efforts', () => {
  it('lists each harness\'s models and efforts, by what its CLI takes', async () => {
    const { harnesses } = await gqlData<{ harnesses: { id: string; models: string[]; efforts: string[] }[] }>(h.mesh.gatewayUrl, '{ harnesses { id models efforts } }');
    const of = (id: string) => harnesses.find((x) => x.id === id)!;
    expect(of('claude-code').models).toEqual(expect.arrayContaining(['sonnet', 'opus', 'haiku']));
    expect(of('claude-code').efforts).toEqual(['low', 'medium', 'high', 'xhigh', 'max']);
    expect(of('codex').efforts).toEqual(['low', 'medium', 'high', 'xhigh']);
    expect(of('pi').efforts).toEqual(['off', 'minimal', 'low', 'medium', 'high', 'xhigh']);
    expect(of('pi').models).toHaveLength(1);
    expect(of('qwen-code').efforts).toEqual([]);
  });

  it('runs a session\'s turns with its model and effort, and a turn with its own', async () => {
    const { startSession } = await gqlData<{ startSession: { id: string } }>(h.mesh.gatewayUrl, START, { h: 'claude-code', i: { projectId, model: 'opus', effort: 'high' } });
    let since = h.model.requests().at(-1)?.seq ?? 0;
    await sendTurn(h.mesh, startSession.id, 'first turn on the session defaults');
    await waitIdle(h.mesh, startSession.id);
    const first = modelCalls(since);
    expect(first.length).toBeGreaterThan(0);
    expect(first.every((c) => /opus/.test(String(c.model)))).toBe(true);
    // `--effort high` reaches the request (claude-code sends it as its output effort).
    expect(effortOf(first[0]!.body)).toBe('high');

    since = h.model.requests().at(-1)?.seq ?? 0;
    const turn = await gqlData<{ sendUserTurn: { turnId: string } }>(h.mesh.gatewayUrl, SEND, { s: startSession.id, t: 'a turn of its own', m: 'sonnet', e: 'low' });
    expect(turn.sendUserTurn.turnId).toEqual(expect.any(String));
    await waitIdle(h.mesh, startSession.id);
    const second = modelCalls(since);
    expect(second.length).toBeGreaterThan(0);
    expect(second.every((c) => /sonnet/.test(String(c.model)))).toBe(true);
    expect(effortOf(second[0]!.body)).toBe('low');
  });

  it('refuses what a CLI cannot take before anything starts', async () => {
    const count = async () => (await h.mesh.sessions.runtime.dataSource.query('SELECT count(*)::int AS n FROM harness_sessions'))[0].n as number;
    const before = await count();
    // qwen-code has no effort flag: CAPABILITY_UNSUPPORTED with the reason.
    const qwen = await gql(h.mesh.gatewayUrl, START, { h: 'qwen-code', i: { projectId, effort: 'high' } });
    expect(codes(qwen)).toEqual(['CAPABILITY_UNSUPPORTED']);
    expect(qwen.errors?.[0]?.message).toMatch(/qwen-code takes no reasoning effort: qwen-code sets reasoning per model/);
    // An effort outside the list, a model pi's config does not declare, a name shaped like an option.
    expect(codes(await gql(h.mesh.gatewayUrl, START, { h: 'claude-code', i: { projectId, effort: 'ludicrous' } }))).toEqual(['BAD_USER_INPUT']);
    expect(codes(await gql(h.mesh.gatewayUrl, START, { h: 'pi', i: { projectId, model: 'not-declared' } }))).toEqual(['BAD_USER_INPUT']);
    expect(codes(await gql(h.mesh.gatewayUrl, START, { h: 'claude-code', i: { projectId, model: '--dangerously-skip-permissions' } }))).toEqual(['BAD_USER_INPUT']);
    expect(await count()).toBe(before);

    const { startSession } = await gqlData<{ startSession: { id: string } }>(h.mesh.gatewayUrl, START, { h: 'claude-code', i: { projectId } });
    const since = h.model.requests().at(-1)?.seq ?? 0;
    expect(codes(await gql(h.mesh.gatewayUrl, SEND, { s: startSession.id, t: 'never sent', e: 'ludicrous' }))).toEqual(['BAD_USER_INPUT']);
    expect(modelCalls(since)).toEqual([]);
  });
});
