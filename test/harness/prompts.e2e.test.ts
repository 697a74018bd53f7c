import { gql, gqlData } from '../support/client';
import { codes, createProject, expectContiguous, sendTurn, startHarnessMesh, subscribeEvents, takeUntil, turnCompleted, waitIdle, type HarnessMesh } from '../support/harness';

jest.setTimeout(180_000);

// Seed 002's prompts (`POST …/prompts/:promptId`): a CLI asks the user a question that is not a tool
// permission — qwen-code's ask_user_question, which its headless mode cannot wait for. The mesh
// records it as a PromptRequest (and HarnessSession.pendingPrompts); answerPrompt runs the answer as
// the session's next turn, recorded as PromptAnswered.

const QUESTION = { question: 'Which color should the banner be?', header: 'Color', options: [{ label: 'red', description: 'warm' }, { label: 'blue', description: 'cool' }] };

let h: HarnessMesh;
let projectId: string;
beforeAll(async () => {
  h = await startHarnessMesh([
    {
      name: 'ask',
      match: { contains: 'PAINT THE BANNER' },
      // qwen-code defers ask_user_question: a model loads it with tool_search first, then calls it.
      reply: [
        { toolCall: { name: 'tool_search', arguments: { query: 'select:ask_user_question' } } },
        { toolCall: { name: 'ask_user_question', arguments: { questions: [QUESTION] } } },
        { text: 'I asked which color you want.' },
      ],
    },
    { name: 'answered', match: { regex: 'Answer to your question "([^"]+)": (\\w+)' }, reply: { text: 'PAINTED $2' } },
  ]);
  projectId = (await createProject(h.mesh, 'prompts')).id;
});
afterAll(() => h?.teardown());

const ANSWER = 'mutation ($s: ID!, $p: ID!, $t: String!) { answerPrompt(sessionId: $s, promptId: $p, text: $t) }';
const PENDING = 'query ($s: ID!) { session(id: $s) { turnInFlight pendingPrompts { promptId question header options { label description } multiSelect turnId } } }';

describe('prompts', () => {
  it('records the question qwen-code asks, runs the answer as the next turn, and takes one answer only', async () => {
    const { startSession } = await gqlData<{ startSession: { id: string } }>(h.mesh.gatewayUrl, 'mutation ($p: ID!) { startSession(harnessId: "qwen-code", input: { projectId: $p }) { id } }', { p: projectId });
    const sessionId = startSession.id;
    const sub = subscribeEvents(h.mesh, { sessionId });
    const asked = await sendTurn(h.mesh, sessionId, 'PAINT THE BANNER please');
    const first = await takeUntil(sub, turnCompleted, 90_000);
    const request = first.find((e) => e.__typename === 'PromptRequest');
    expect(request).toMatchObject({ turnId: asked.turnId, question: QUESTION.question, header: 'Color', options: QUESTION.options, multiSelect: false, promptId: expect.any(String) });
    // The tool call itself stays visible as a ToolUse with the same id.
    expect(first.find((e) => e.__typename === 'ToolUse' && e.name === 'ask_user_question')).toMatchObject({ toolUseId: request!.promptId });
    await waitIdle(h.mesh, sessionId);
    const pending = await gqlData<{ session: { pendingPrompts: unknown[] } }>(h.mesh.gatewayUrl, PENDING, { s: sessionId });
    expect(pending.session.pendingPrompts).toEqual([{ promptId: request!.promptId, question: QUESTION.question, header: 'Color', options: QUESTION.options, multiSelect: false, turnId: asked.turnId }]);

    // Unknown prompts and sessions are NOT_FOUND, an empty answer BAD_USER_INPUT — nothing recorded.
    expect(codes(await gql(h.mesh.gatewayUrl, ANSWER, { s: sessionId, p: 'no-such-prompt', t: 'blue' }))).toEqual(['NOT_FOUND']);
    expect(codes(await gql(h.mesh.gatewayUrl, ANSWER, { s: sessionId, p: request!.promptId, t: '' }))).toEqual(['BAD_USER_INPUT']);

    const since = h.model.requests().at(-1)?.seq ?? 0;
    expect((await gqlData<{ answerPrompt: boolean }>(h.mesh.gatewayUrl, ANSWER, { s: sessionId, p: request!.promptId, t: 'blue' })).answerPrompt).toBe(true);
    const second = await takeUntil(sub, turnCompleted, 90_000);
    // Recorded as the answer's turn starts (the CLI's first output comes later, but no order is promised).
    expect(second.filter((e) => e.__typename === 'PromptAnswered')).toEqual([expect.objectContaining({ promptId: request!.promptId, text: 'blue', turnId: null })]);
    expect(second.at(-1)).toMatchObject({ __typename: 'TurnComplete', status: 'COMPLETED', result: expect.stringContaining('PAINTED blue') });
    expectContiguous([...first, ...second], sessionId, first[0]!.seq);
    // The CLI got the answer with its question.
    expect(h.model.requests(since).some((r) => JSON.stringify(r.body).includes(`Answer to your question \\"${QUESTION.question}\\": blue`))).toBe(true);
    await sub.close();

    await waitIdle(h.mesh, sessionId);
    expect((await gqlData<{ session: { pendingPrompts: unknown[] } }>(h.mesh.gatewayUrl, PENDING, { s: sessionId })).session.pendingPrompts).toEqual([]);
    const again = await gql(h.mesh.gatewayUrl, ANSWER, { s: sessionId, p: request!.promptId, t: 'red' });
    expect(codes(again)).toEqual(['CONFLICT']);
    const { session } = await gqlData<{ session: { turnInFlight: boolean } }>(h.mesh.gatewayUrl, 'query ($s: ID!) { session(id: $s) { turnInFlight } }', { s: sessionId });
    expect(session.turnInFlight).toBe(false);
  });

  it('refuses an answer while a turn is in flight (TURN_IN_FLIGHT), leaving the prompt pending', async () => {
    const { startSession } = await gqlData<{ startSession: { id: string } }>(h.mesh.gatewayUrl, 'mutation ($p: ID!) { startSession(harnessId: "qwen-code", input: { projectId: $p }) { id } }', { p: projectId });
    const sessionId = startSession.id;
    await sendTurn(h.mesh, sessionId, 'PAINT THE BANNER now');
    await waitIdle(h.mesh, sessionId, 90_000);
    const [prompt] = (await gqlData<{ session: { pendingPrompts: { promptId: string }[] } }>(h.mesh.gatewayUrl, PENDING, { s: sessionId })).session.pendingPrompts;
    expect(prompt).toBeDefined();
    await sendTurn(h.mesh, sessionId, 'SLOW 20000 keep talking for a while');
    const refused = await gql(h.mesh.gatewayUrl, ANSWER, { s: sessionId, p: prompt!.promptId, t: 'red' });
    expect(codes(refused)).toEqual(['TURN_IN_FLIGHT']);
    expect((await gqlData<{ session: { pendingPrompts: { promptId: string }[] } }>(h.mesh.gatewayUrl, PENDING, { s: sessionId })).session.pendingPrompts.map((p) => p.promptId)).toEqual([prompt!.promptId]);
    await gqlData(h.mesh.gatewayUrl, 'mutation ($s: ID!) { interruptSession(sessionId: $s) }', { s: sessionId });
    await waitIdle(h.mesh, sessionId);
  });
});
