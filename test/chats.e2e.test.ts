import { startModelServer, type ModelServer } from '@keelson/model-server';
import type { Rib, ToolDefinition } from '@keelson/ribs-contract';
import { z } from 'zod';
import { gql, gqlData, subscribe } from './support/client';
import { codes } from './support/harness';
import { projectWithWorkflow, startWorkflow, waitForRun } from './support/runs';
import { startTestMesh, type TestMesh } from './support/mesh';
import { quietTemporalRuntime } from './support/temporalServer';
import { until } from './support/until';

quietTemporalRuntime();
jest.setTimeout(180_000);

/** What the desk rib's tools really did (the worker's rib host runs in this process). */
const done: { tool: string; label: string }[] = [];

/** `desk_wait` holds its tool round until the test lets it go. */
let letGo: () => void = () => undefined;
const waiting = { calls: 0, released: Promise.resolve() };
function holdNextWait(): void {
  waiting.released = new Promise<void>((resolve) => (letGo = resolve));
}

function deskTool(name: string): ToolDefinition {
  return {
    name,
    description: `${name} a label.`,
    inputSchema: z.strictObject({ label: z.string().min(1) }),
    state_changing: true,
    execute(input: { label: string }, ctx) {
      done.push({ tool: name, label: input.label });
      ctx.emit({ type: 'tool_result', toolUseId: '', content: `${name} ${input.label}` });
    },
  } as ToolDefinition;
}

/**
 * A rib with an agent, three tools and a policy that decides on the `chat` surface: shredding asks a
 * human there, burning is refused there, filing is free.
 */
const deskRib: Rib = {
  id: 'desk',
  displayName: 'Desk',
  registerTools: () => [
    deskTool('desk_file'),
    deskTool('desk_shred'),
    deskTool('desk_burn'),
    {
      name: 'desk_wait',
      description: 'Waits at the desk.',
      inputSchema: z.strictObject({ label: z.string().min(1) }),
      async execute(input: { label: string }, ctx) {
        waiting.calls += 1;
        await waiting.released;
        ctx.emit({ type: 'tool_result', toolUseId: '', content: `waited for ${input.label}` });
      },
    } as ToolDefinition,
  ],
  contributePolicies: () => [
    {
      id: 'chat-guard',
      on: [{ phase: 'tool_call' }],
      evaluate: (event, ctx) => {
        if (ctx.surface !== 'chat' || event.phase !== 'tool_call') return { outcome: 'allow' };
        if (event.tool === 'desk_shred') return { outcome: 'ask', reason: 'shredding from a chat needs a human' };
        if (event.tool === 'desk_burn') return { outcome: 'deny', reason: 'nothing is burnt from a chat' };
        return { outcome: 'allow' };
      },
    },
  ],
  listAgents: () => [{ slug: 'clerk', name: 'Clerk', description: 'Files things.' }],
  resolveAgent: (slug) => (slug === 'clerk' ? { name: 'Clerk', systemPrompt: 'You are the clerk of the desk.' } : null),
  listCommands: () => [
    { name: 'clerk', description: 'Open a chat with the clerk.' },
    { name: 'hello', description: 'Greets.', argument: { hint: 'name' } },
    { name: 'archive', description: 'Archives a label.', argument: { hint: 'label' } },
  ],
  invokeCommand: (name, arg) => {
    if (name === 'clerk') return { ok: true, effect: { effect: 'open-agent', ribId: 'desk', slug: 'clerk' } };
    if (name === 'hello') return { ok: true, effect: { effect: 'message', markdown: `Hello, **${arg || 'nobody'}**.` } };
    if (name === 'archive') return { ok: true, effect: { effect: 'run-workflow', workflow: 'desk-archive', args: arg } };
    return { ok: false, error: `no desk command '${name}'` };
  },
};

const CHAT_FIELDS = 'id title agent status error turns tools temporalWorkflowId rib { id displayName } messages { edges { cursor node { id turnId role text } } }';
const EVENT_FIELDS = 'cursor chatId type turnId messageId role text tool toolUseId isError approvalId approved status error ribId command effect';

interface ChatView {
  id: string;
  title: string;
  agent: string | null;
  status: string;
  error: string | null;
  turns: number;
  tools: string[];
  temporalWorkflowId: string;
  rib: { id: string; displayName: string } | null;
  messages: { edges: { cursor: string; node: { id: string; turnId: string; role: string; text: string } }[] };
}

interface ChatEventView {
  cursor: string;
  chatId: string;
  type: string;
  turnId: string | null;
  messageId: string | null;
  role: string | null;
  text: string | null;
  tool: string | null;
  toolUseId: string | null;
  isError: boolean | null;
  approvalId: string | null;
  approved: boolean | null;
  status: string | null;
  error: string | null;
  ribId: string | null;
  command: string | null;
  effect: string | null;
}

describe('chats: conversations with a rib agent, its tools on the chat policy surface', () => {
  let model: ModelServer;
  let mesh: TestMesh;
  let url: string;

  const chatOf = async (id: string) => (await gqlData<{ chat: ChatView | null }>(url, `query ($id: ID!) { chat(id: $id) { ${CHAT_FIELDS} } }`, { id })).chat;
  const idle = async (id: string): Promise<ChatView> => (await until(`chat ${id} idle`, () => chatOf(id), (c) => c?.status === 'IDLE' && c.messages.edges.at(-1)?.node.role === 'ASSISTANT', 60_000))!;
  const send = (chatId: string, text: string, key?: string) =>
    gql<{ sendChatMessage: { id: string; chatId: string; messageId: string } }>(
      url,
      'mutation ($c: ID!, $t: String!, $k: String) { sendChatMessage(chatId: $c, text: $t, idempotencyKey: $k) { id chatId messageId } }',
      { c: chatId, t: text, k: key ?? null },
    );
  const events = async (chatId: string, after: string | null, until: (e: ChatEventView) => boolean) => {
    const sub = subscribe<{ chatEvents: ChatEventView }>(mesh.gatewayWsUrl, `subscription ($c: ID!, $a: String) { chatEvents(chatId: $c, after: $a) { ${EVENT_FIELDS} } }`, { c: chatId, a: after });
    const seen: ChatEventView[] = [];
    try {
      for (;;) {
        const res = await sub.next(60_000);
        if (res.errors) throw new Error(JSON.stringify(res.errors));
        seen.push(res.data!.chatEvents);
        if (until(res.data!.chatEvents)) return seen;
      }
    } finally {
      await sub.close();
    }
  };

  beforeAll(async () => {
    model = await startModelServer({
      rules: [
        { name: 'recall', match: { contains: 'What did I ask before?' }, reply: (ctx) => ({ text: `Before: ${ctx.earlierUserTexts.join(' | ') || 'nothing'}` }) },
        { name: 'steered', match: { contains: 'Steering note from the operator' }, reply: (ctx) => ({ text: `Heard: ${/sent while you work: (.*)\]$/.exec(ctx.userText)?.[1] ?? '?'}` }) },
      ],
    });
    mesh = await startTestMesh({ KEELSON_MODEL_BASE_URL: model.url, KEELSON_MODEL_API_KEY: 'keelson-test' }, { ribHost: { available: { desk: deskRib } } });
    url = mesh.gatewayUrl;
  });

  afterAll(async () => {
    await mesh?.teardown();
    await model?.stop();
  });

  it('starts from a rib agent, runs its tool in the first turn, and streams the turn from the start', async () => {
    const { startChat } = await gqlData<{ startChat: ChatView }>(
      url,
      `mutation { startChat(input: { ribId: "desk", agent: "clerk", text: "CALL_TOOL desk_file {\\"label\\": \\"invoice-7\\"}" }) { ${CHAT_FIELDS} } }`,
    );
    expect(startChat).toMatchObject({ title: 'Clerk', agent: 'clerk', rib: { id: 'desk', displayName: 'Desk' }, temporalWorkflowId: `chat-${startChat.id}` });
    expect([...startChat.tools].sort()).toEqual(['desk_burn', 'desk_file', 'desk_shred', 'desk_wait']);

    const seen = await events(startChat.id, null, (e) => e.type === 'CHAT_TURN_ENDED');
    expect(seen.map((e) => e.type)).toEqual(['CHAT_STARTED', 'CHAT_MESSAGE', 'CHAT_TURN_STARTED', 'CHAT_TOOL_CALL', 'CHAT_TOOL_RESULT', 'CHAT_DELTA', 'CHAT_MESSAGE', 'CHAT_TURN_ENDED']);
    expect(seen[3]).toMatchObject({ tool: 'desk_file' });
    expect(seen[4]).toMatchObject({ text: 'desk_file invoice-7', isError: null, toolUseId: seen[3]!.toolUseId });
    expect(seen[7]).toMatchObject({ status: 'ok', error: null });
    expect(new Set(seen.slice(1).map((e) => e.turnId)).size).toBe(1);
    expect(done).toEqual([{ tool: 'desk_file', label: 'invoice-7' }]);

    const chat = await idle(startChat.id);
    expect(chat.turns).toBe(1);
    expect(chat.messages.edges.map((e) => e.node.role)).toEqual(['USER', 'ASSISTANT']);
    expect(chat.messages.edges[1]!.node.text).toBe('DONE desk_file: desk_file invoice-7');
    // The text as the turn streamed it, then the stored answer.
    expect(seen[5]).toMatchObject({ text: chat.messages.edges[1]!.node.text });
    expect(seen[6]).toMatchObject({ role: 'ASSISTANT', messageId: chat.messages.edges[1]!.node.id, text: chat.messages.edges[1]!.node.text });
  });

  it('asks the approval inbox before a tool its policy gates on the chat surface (the chat names the approval), refuses a second message meanwhile, and runs the tool once approved', async () => {
    const { startChat } = await gqlData<{ startChat: ChatView }>(url, 'mutation { startChat(input: { ribId: "desk", agent: "clerk" }) { id status turns } }');
    expect(startChat).toMatchObject({ status: 'IDLE', turns: 0 });
    const sent = await send(startChat.id, 'CALL_TOOL desk_shred {"label": "draft-3"}');
    expect(sent.errors).toBeUndefined();
    const turnId = sent.data!.sendChatMessage.id;

    const ask = await until(
      'the chat ask in the inbox',
      async () => (await gqlData<{ approvals: { edges: { node: { id: string; kind: string; question: string } }[] } }>(url, '{ approvals(status: "OPEN") { edges { node { id kind question } } } }')).approvals.edges,
      (edges) => edges.some((e) => e.node.question.includes("tool 'desk_shred'")),
      60_000,
    );
    const approval = ask.find((e) => e.node.question.includes("tool 'desk_shred'"))!.node;
    expect(approval.kind).toBe('POLICY_ASK');
    expect(approval.question).toMatch(/surface chat/);
    expect(done.filter((d) => d.tool === 'desk_shred')).toEqual([]);

    // One turn at a time: a second message while the first waits is refused, and changes nothing.
    const second = await send(startChat.id, 'and another thing');
    expect(codes(second)).toEqual(['TURN_IN_FLIGHT']);

    // The chat's own stream names the approval the turn waits on: a frontend answers it in place.
    const asked = await events(startChat.id, null, (e) => e.type === 'CHAT_APPROVAL_OPENED');
    expect(asked.at(-1)).toMatchObject({ turnId, tool: 'desk_shred', approvalId: approval.id, text: 'shredding from a chat needs a human', approved: null });

    const answered = await gql(url, 'mutation ($id: ID!) { answerApproval(id: $id, decision: APPROVE) { id status } }', { id: approval.id });
    expect(answered.errors).toBeUndefined();
    const chat = await idle(startChat.id);
    expect(done.filter((d) => d.tool === 'desk_shred')).toEqual([{ tool: 'desk_shred', label: 'draft-3' }]);
    expect(chat.turns).toBe(1);
    expect(chat.messages.edges.map((e) => [e.node.role, e.node.turnId])).toEqual([
      ['USER', turnId],
      ['ASSISTANT', turnId],
    ]);
    const rest = await events(startChat.id, asked.at(-1)!.cursor, (e) => e.type === 'CHAT_TURN_ENDED');
    expect(rest.map((e) => e.type)).toEqual(['CHAT_APPROVAL_ANSWERED', 'CHAT_TOOL_RESULT', 'CHAT_DELTA', 'CHAT_MESSAGE', 'CHAT_TURN_ENDED']);
    expect(rest[0]).toMatchObject({ turnId, tool: 'desk_shred', approvalId: approval.id, approved: true });

    // Denied in the inbox: the tool does not run, and the chat says so.
    const again = await send(startChat.id, 'CALL_TOOL desk_shred {"label": "draft-4"}');
    expect(again.errors).toBeUndefined();
    const opened = await events(startChat.id, rest.at(-1)!.cursor, (e) => e.type === 'CHAT_APPROVAL_OPENED');
    const denied = await gql(url, 'mutation ($id: ID!) { answerApproval(id: $id, decision: DENY) { id status } }', { id: opened.at(-1)!.approvalId });
    expect(denied.errors).toBeUndefined();
    const ended = await events(startChat.id, opened.at(-1)!.cursor, (e) => e.type === 'CHAT_TURN_ENDED');
    expect(ended[0]).toMatchObject({ type: 'CHAT_APPROVAL_ANSWERED', approvalId: opened.at(-1)!.approvalId, approved: false });
    expect(ended.find((e) => e.type === 'CHAT_TOOL_RESULT')).toMatchObject({ isError: true, text: expect.stringMatching(/not approved/) });
    await idle(startChat.id);
    expect(done.filter((d) => d.tool === 'desk_shred')).toEqual([{ tool: 'desk_shred', label: 'draft-3' }]);
  });

  it('takes a steer note mid-turn: the turn reads it after its tool round, before its next model call; none without a turn', async () => {
    const { startChat } = await gqlData<{ startChat: ChatView }>(url, 'mutation { startChat(input: { ribId: "desk", agent: "clerk" }) { id } }');
    const steer = (note: string) =>
      gqlData<{ steerChat: { accepted: boolean; status: string; reason: string | null } }>(url, 'mutation ($c: ID!, $n: String!) { steerChat(chatId: $c, note: $n) { accepted status reason } }', {
        c: startChat.id,
        n: note,
      });
    expect((await steer('too early')).steerChat).toMatchObject({ accepted: false, status: 'REJECTED' });

    expect((await send(startChat.id, 'CALL_TOOL desk_shred {"label": "memo-2"}')).errors).toBeUndefined();
    const approval = await until(
      'the ask',
      async () => (await gqlData<{ approvals: { edges: { node: { id: string; question: string } }[] } }>(url, '{ approvals(status: "OPEN") { edges { node { id question } } } }')).approvals.edges,
      (edges) => edges.some((e) => e.node.question.includes("tool 'desk_shred'")),
      60_000,
    );
    // The turn waits in its tool round: the note is queued for it.
    expect((await steer('use the blue bin')).steerChat).toMatchObject({ accepted: true, status: 'ACCEPTED' });
    await gqlData(url, 'mutation ($id: ID!) { answerApproval(id: $id, decision: APPROVE) { id } }', { id: approval.find((e) => e.node.question.includes("tool 'desk_shred'"))!.node.id });

    const seen = await events(startChat.id, null, (e) => e.type === 'CHAT_TURN_ENDED');
    const types = seen.map((e) => e.type);
    expect(types.indexOf('CHAT_STEERED')).toBeGreaterThan(types.indexOf('CHAT_TOOL_RESULT'));
    expect(types.indexOf('CHAT_STEERED')).toBeLessThan(types.lastIndexOf('CHAT_MESSAGE'));
    expect(seen.find((e) => e.type === 'CHAT_STEERED')).toMatchObject({ text: 'use the blue bin' });
    const chat = await idle(startChat.id);
    expect(chat.messages.edges.at(-1)!.node.text).toBe('Heard: use the blue bin');
    expect((await steer('too late')).steerChat).toMatchObject({ accepted: false, status: 'REJECTED' });
  });

  it('serves prompt nodes from the same steer queue: steerRun reaches a running prompt node between its tool rounds', async () => {
    const project = await projectWithWorkflow(url, 'desk-steer', {
      'desk-steer.yaml': `
name: desk-steer
nodes:
  - id: wait
    type: prompt
    allowed_tools: [desk_wait]
    prompt: 'CALL_TOOL desk_wait {"label": "the post"}'
  - id: after
    type: bash
    depends_on: [wait]
    bash: echo done
`,
    });
    holdNextWait();
    const calls = waiting.calls;
    const run = await startWorkflow(url, 'desk-steer', { projectId: project.id });
    const steer = (nodeId: string, note: string) =>
      gql<{ steerRun: { accepted: boolean; status: string; reason: string | null } }>(url, 'mutation ($r: ID!, $n: String!, $t: String!) { steerRun(runId: $r, nodeId: $n, note: $t) { accepted status reason } }', {
        r: run.id,
        n: nodeId,
        t: note,
      });
    await until('the node in its tool round', () => waiting.calls, (n) => n > calls, 60_000);
    expect((await steer('wait', 'sign for it too')).data!.steerRun).toMatchObject({ accepted: true, status: 'ACCEPTED' });
    expect((await steer('after', 'not a turn')).data!.steerRun).toMatchObject({ accepted: false, status: 'REJECTED' });
    expect(codes(await steer('nowhere', 'hello'))).toEqual(['NOT_FOUND']);
    letGo();
    const finished = await waitForRun(url, run.id, (r) => r.status === 'SUCCEEDED' || r.status === 'FAILED', 60_000);
    expect(finished.status).toBe('SUCCEEDED');
    expect(finished.nodes.find((n) => n.id === 'wait')!.output).toBe('Heard: sign for it too');
    expect((await steer('wait', 'too late')).data!.steerRun).toMatchObject({ accepted: false, status: 'REJECTED' });
  });

  it('refuses a tool its policy denies on the chat surface (the tool never runs) and the turn still ends', async () => {
    const { startChat } = await gqlData<{ startChat: ChatView }>(url, 'mutation { startChat(input: { ribId: "desk", agent: "clerk", text: "CALL_TOOL desk_burn {\\"label\\": \\"ledger\\"}" }) { id } }');
    const seen = await events(startChat.id, null, (e) => e.type === 'CHAT_TURN_ENDED');
    const result = seen.find((e) => e.type === 'CHAT_TOOL_RESULT')!;
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/nothing is burnt from a chat/);
    expect(seen.at(-1)).toMatchObject({ status: 'ok' });
    expect(done.filter((d) => d.tool === 'desk_burn')).toEqual([]);
  });

  it('keeps the conversation (the provider session resumes), resumes chatEvents from a cursor, and makes a repeated key one message', async () => {
    const { startChat } = await gqlData<{ startChat: ChatView }>(url, 'mutation { startChat(input: { text: "Remember the word heron." }) { id title rib { id } tools } }');
    expect(startChat).toMatchObject({ title: 'Remember the word heron.', rib: null, tools: [] });
    const first = await events(startChat.id, null, (e) => e.type === 'CHAT_TURN_ENDED');
    await idle(startChat.id);

    const a = await send(startChat.id, 'What did I ask before?', 'recall-1');
    const b = await send(startChat.id, 'What did I ask before?', 'recall-1');
    expect(a.errors).toBeUndefined();
    expect(b.data!.sendChatMessage).toEqual(a.data!.sendChatMessage);

    // From the first turn's last cursor: exactly the second turn, nothing of the first again.
    const rest = await events(startChat.id, first.at(-1)!.cursor, (e) => e.type === 'CHAT_TURN_ENDED');
    expect(rest.map((e) => e.type)).toEqual(['CHAT_MESSAGE', 'CHAT_TURN_STARTED', 'CHAT_DELTA', 'CHAT_MESSAGE', 'CHAT_TURN_ENDED']);
    expect(rest.every((e) => e.turnId === a.data!.sendChatMessage.id)).toBe(true);
    expect(rest[3]).toMatchObject({ role: 'ASSISTANT', text: 'Before: Remember the word heron.' });
    const chat = await idle(startChat.id);
    expect(chat.turns).toBe(2);
    expect(chat.messages.edges.filter((e) => e.node.role === 'USER')).toHaveLength(2);

    // Captured into memory like every turn: the conversation chat:<id>, each message once.
    const history = await until(
      'the chat in memory',
      async () => (await gqlData<{ sessionHistory: { role: string; content: string }[] }>(url, 'query ($s: ID!) { sessionHistory(sessionId: $s, limit: 20) { role content } }', { s: `chat:${startChat.id}` })).sessionHistory,
      (h) => h.length >= 4,
      30_000,
    );
    expect(history.map((m) => [m.role, m.content])).toEqual(chat.messages.edges.map((e) => [e.node.role.toLowerCase(), e.node.text]));
  });

  it('runs a rib command from a chat and returns its effect typed (an open-agent one is honoured with startChat)', async () => {
    const { startChat } = await gqlData<{ startChat: ChatView }>(url, 'mutation { startChat(input: { ribId: "desk" }) { id } }');
    const run = (vars: Record<string, unknown>) =>
      gql<{ runChatCommand: Record<string, unknown> }>(
        url,
        'mutation ($c: ID, $n: String!, $a: JSON) { runChatCommand(chatId: $c, ribId: "desk", name: $n, args: $a) { ok error effect markdown ribId agent seed { name systemPrompt openingPrompt } workflow args } }',
        { c: null, a: null, ...vars },
      );
    const hello = await run({ c: startChat.id, n: 'hello', a: 'Ada' });
    expect(hello.data!.runChatCommand).toMatchObject({ ok: true, effect: 'MESSAGE', markdown: 'Hello, **Ada**.', workflow: null, seed: null });
    const archive = await run({ n: 'archive', a: 'box-9' });
    expect(archive.data!.runChatCommand).toMatchObject({ ok: true, effect: 'RUN_WORKFLOW', workflow: 'desk-archive', args: 'box-9' });
    const refused = await run({ c: startChat.id, n: 'shout' });
    expect(refused.data!.runChatCommand).toMatchObject({ ok: false, error: "rib 'desk' has no command 'shout'", effect: null });
    expect(codes(await run({ n: 'hello', a: { name: 'Ada' } }))).toEqual(['BAD_USER_INPUT']);

    // The chat shows what ran in it (and only that): the greeting, and the refusal.
    const seen = await events(startChat.id, null, (e) => e.type === 'CHAT_COMMAND' && e.command === 'shout');
    const commands = seen.filter((e) => e.type === 'CHAT_COMMAND');
    expect(commands.map((e) => [e.command, e.effect, e.text, e.error])).toEqual([
      ['hello', 'MESSAGE', 'Hello, **Ada**.', null],
      ['shout', null, null, "rib 'desk' has no command 'shout'"],
    ]);

    const open = await run({ n: 'clerk' });
    expect(open.data!.runChatCommand).toMatchObject({ ok: true, effect: 'OPEN_CHAT', ribId: 'desk', agent: 'clerk', seed: { name: 'Clerk', systemPrompt: 'You are the clerk of the desk.', openingPrompt: null } });
    const opened = await gqlData<{ startChat: ChatView }>(url, 'mutation ($r: ID!, $a: String!) { startChat(input: { ribId: $r, agent: $a }) { id title agent } }', { r: 'desk', a: 'clerk' });
    expect(opened.startChat).toMatchObject({ title: 'Clerk', agent: 'clerk' });
  });

  it('starts a chat from a command whose effect opens an agent, and refuses any other command with nothing created', async () => {
    const start = (command: string, ribId = 'desk') =>
      gql<{ startChat: ChatView }>(url, 'mutation ($r: ID, $c: String) { startChat(input: { ribId: $r, command: $c }) { id title agent tools rib { id } } }', { r: ribId, c: command });
    const opened = await start('/clerk');
    expect(opened.errors).toBeUndefined();
    expect(opened.data!.startChat).toMatchObject({ title: 'Clerk', agent: 'clerk', rib: { id: 'desk' } });
    expect([...opened.data!.startChat.tools].sort()).toEqual(['desk_burn', 'desk_file', 'desk_shred', 'desk_wait']);
    expect(await chatOf(opened.data!.startChat.id)).toMatchObject({ agent: 'clerk', status: 'IDLE' });

    const count = async () => (await gqlData<{ chats: { edges: unknown[] } }>(url, '{ chats(first: 200) { edges { cursor } } }')).chats.edges.length;
    const before = await count();
    const message = await start('/hello Ada');
    expect(codes(message)).toEqual(['BAD_USER_INPUT']);
    expect(message.errors![0]!.message).toBe('command /hello of rib desk has a MESSAGE effect, not OPEN_CHAT: run it with runChatCommand');
    const refused = await start('/shout');
    expect(refused.errors![0]!.message).toBe("command /shout of rib desk refused: rib 'desk' has no command 'shout'");
    expect(codes(refused)).toEqual(['BAD_USER_INPUT']);
    expect(codes(await start('clerk'))).toEqual(['BAD_USER_INPUT']);
    expect(codes(await gql(url, 'mutation { startChat(input: { command: "/clerk" }) { id } }'))).toEqual(['BAD_USER_INPUT']);
    expect(codes(await gql(url, 'mutation { startChat(input: { ribId: "desk", agent: "clerk", command: "/clerk" }) { id } }'))).toEqual(['BAD_USER_INPUT']);
    expect(codes(await start('/clerk', 'no-such-rib'))).toEqual(['NOT_FOUND']);
    expect(await count()).toBe(before);
  });

  it('refuses bad input with its code and creates nothing', async () => {
    const count = async () => (await gqlData<{ chats: { edges: unknown[] } }>(url, '{ chats(first: 200) { edges { cursor } } }')).chats.edges.length;
    const before = await count();
    expect(codes(await gql(url, 'mutation { startChat(input: { ribId: "desk", agent: "nobody" }) { id } }'))).toEqual(['NOT_FOUND']);
    expect(codes(await gql(url, 'mutation { startChat(input: { ribId: "no-such-rib" }) { id } }'))).toEqual(['NOT_FOUND']);
    expect(codes(await gql(url, 'mutation { startChat(input: { agent: "clerk" }) { id } }'))).toEqual(['BAD_USER_INPUT']);
    expect(await count()).toBe(before);
    const { startChat } = await gqlData<{ startChat: ChatView }>(url, 'mutation { startChat(input: { ribId: "desk" }) { id } }');
    expect(codes(await send(startChat.id, '   '))).toEqual(['BAD_USER_INPUT']);
    expect(codes(await send('not-a-chat', 'hello'))).toEqual(['BAD_USER_INPUT']);
    const missing = subscribe(mesh.gatewayWsUrl, 'subscription { chatEvents(chatId: "00000000-0000-4000-8000-000000000000") { cursor } }');
    expect(codes(await missing.next(20_000))).toEqual(['NOT_FOUND']);
    await missing.close();
    expect(await chatOf('00000000-0000-4000-8000-000000000000')).toBeNull();
  });
});
