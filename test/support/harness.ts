import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startModelServer, type ModelServer, type Rule } from '@keelson/model-server';
import { gql, gqlData, subscribe, type GraphQLResponse, type Subscription } from './client';
import { startTestMesh, type TestMesh } from './mesh';

/** Every HarnessEvent field a test looks at, for every implementation. */
export const HARNESS_EVENTS = `subscription ($sessionId: ID, $harnessId: ID, $after: String) {
  harnessEvents(sessionId: $sessionId, harnessId: $harnessId, after: $after) {
    __typename cursor sessionId seq harnessId turnId taskId at
    ... on AssistantDelta { text messageId truncated }
    ... on ReasoningDelta { text }
    ... on ToolUse { toolUseId name input }
    ... on ToolResult { toolUseId output isError }
    ... on ApprovalRequest { requestId toolName input reason }
    ... on ApprovalResolved { requestId decision }
    ... on PromptRequest { promptId question header options { label description } multiSelect }
    ... on PromptAnswered { promptId text }
    ... on SessionCreated { origin projectId cwd }
    ... on TurnComplete { status error result exitCode }
    ... on HarnessError { code message }
    ... on SessionUpdated { previousSessionId sessionStatus }
  }
}`;

export interface Ev {
  __typename: string;
  cursor: string;
  sessionId: string;
  seq: number;
  harnessId: string;
  turnId: string | null;
  taskId: string | null;
  text?: string;
  toolUseId?: string;
  name?: string;
  input?: unknown;
  output?: string;
  isError?: boolean;
  status?: string;
  error?: string | null;
  result?: string | null;
  requestId?: string;
  toolName?: string;
  decision?: string;
  promptId?: string;
  question?: string;
  header?: string | null;
  options?: { label: string; description: string | null }[];
  multiSelect?: boolean;
  origin?: string;
  previousSessionId?: string | null;
}

export type EventSub = Subscription<{ harnessEvents: Ev }>;

export function subscribeEvents(mesh: TestMesh, vars: { sessionId?: string; harnessId?: string; after?: string }): EventSub {
  return subscribe<{ harnessEvents: Ev }>(mesh.gatewayWsUrl, HARNESS_EVENTS, vars);
}

function eventOf(r: GraphQLResponse<{ harnessEvents: Ev }>): Ev {
  if (r.errors?.length || !r.data) throw new Error(`subscription error: ${JSON.stringify(r.errors)}`);
  return r.data.harnessEvents;
}

/** Takes events until one satisfies `done` (included). */
export async function takeUntil(sub: EventSub, done: (e: Ev) => boolean, timeoutMs = 60_000): Promise<Ev[]> {
  const out: Ev[] = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const e = eventOf(await sub.next(Math.max(1, deadline - Date.now())));
    out.push(e);
    if (done(e)) return out;
  }
}

export const turnCompleted = (e: Ev) => e.__typename === 'TurnComplete';

/** A harness scenario's mesh: the whole stack with the harness CLIs pointed at a local model server. */
export interface HarnessMesh {
  mesh: TestMesh;
  model: ModelServer;
  teardown(): Promise<void>;
}

export async function startHarnessMesh(rules: Rule[] = [], env: NodeJS.ProcessEnv = {}): Promise<HarnessMesh> {
  const model = await startModelServer({ rules });
  let mesh: TestMesh;
  try {
    mesh = await startTestMesh({ KEELSON_MODEL_BASE_URL: model.url, KEELSON_MODEL_API_KEY: 'keelson-test', ...env });
  } catch (err) {
    await model.stop();
    throw err;
  }
  return {
    mesh,
    model,
    async teardown() {
      await mesh.teardown();
      await model.stop();
    },
  };
}

export async function createProject(mesh: TestMesh, name: string): Promise<{ id: string; rootPath: string }> {
  const { createProject } = await gqlData<{ createProject: { id: string; rootPath: string } }>(
    mesh.gatewayUrl,
    'mutation ($input: CreateProjectInput!) { createProject(input: $input) { id rootPath } }',
    { input: { name } },
  );
  return createProject;
}

export const SESSION_FIELDS = 'id enc nativeId status origin cwd turnInFlight currentTurnId aliases project { id } harness { id }';

export interface SessionData {
  id: string;
  enc: string;
  nativeId: string;
  status: string;
  origin: string;
  cwd: string | null;
  turnInFlight: boolean;
  currentTurnId: string | null;
  aliases: string[];
  project: { id: string } | null;
  harness: { id: string };
}

export async function sessionOf(mesh: TestMesh, id: string): Promise<SessionData | null> {
  return (await gqlData<{ session: SessionData | null }>(mesh.gatewayUrl, `query ($id: ID!) { session(id: $id) { ${SESSION_FIELDS} } }`, { id })).session;
}

export async function sendTurn(mesh: TestMesh, sessionId: string, text: string): Promise<{ sessionId: string; turnId: string }> {
  return (
    await gqlData<{ sendUserTurn: { sessionId: string; turnId: string } }>(
      mesh.gatewayUrl,
      'mutation ($s: ID!, $t: String!) { sendUserTurn(sessionId: $s, text: $t) { sessionId turnId acceptedAt } }',
      { s: sessionId, t: text },
    )
  ).sendUserTurn;
}

/** Polls until the session holds no turn. */
export async function waitIdle(mesh: TestMesh, sessionId: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const s = await sessionOf(mesh, sessionId);
    if (s && !s.turnInFlight) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`session ${sessionId} still has a turn in flight after ${timeoutMs} ms`);
}

export interface TranscriptPage {
  edges: { cursor: string; node: { id: string; role: string; content: string; toolCalls: unknown } }[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

export async function transcriptOf(mesh: TestMesh, id: string, first = 200, after?: string): Promise<TranscriptPage> {
  const { session } = await gqlData<{ session: { transcript: TranscriptPage } }>(
    mesh.gatewayUrl,
    'query ($id: ID!, $first: Int, $after: String) { session(id: $id) { transcript(first: $first, after: $after) { edges { cursor node { id role content toolCalls } } pageInfo { hasNextPage endCursor } } } }',
    { id, first, after },
  );
  return session.transcript;
}

/** The error codes of a response, in order. */
export function codes(res: { errors?: { extensions?: Record<string, unknown> }[] }): unknown[] {
  return (res.errors ?? []).map((e) => e.extensions?.code);
}

/** Asserts the per-session sequence runs without a gap over `events`. */
export function expectContiguous(events: Ev[], sessionId: string, from?: number): void {
  const seqs = events.filter((e) => e.sessionId === sessionId).map((e) => e.seq);
  const start = from ?? seqs[0]!;
  expect(seqs).toEqual(seqs.map((_, i) => start + i));
}

/**
 * The acceptance scenario of one CLI, through the gateway: a session in a fresh project (started,
 * or adopted through a task where the CLI cannot pin an id), a turn whose scripted reply makes the
 * CLI write a file with its own tool, the turn's events over `harnessEvents`, the socket dropped, a
 * second turn resuming the same native session while nobody listens, a resume from the cursor with
 * nothing missed, and the transcript read from the native store.
 */
export async function runAcceptanceScenario(h: HarnessMesh, harnessId: string, how: 'start' | 'task'): Promise<void> {
  const { mesh } = h;
  const project = await createProject(mesh, `proj-${harnessId}`);
  const file = `notes/${harnessId}.txt`;
  const firstText = `WRITE_FILE ${file} written by ${harnessId}`;

  let sessionId: string;
  let sub: EventSub;
  let first: Ev[];
  if (how === 'start') {
    const started = await gqlData<{ startSession: SessionData }>(
      mesh.gatewayUrl,
      `mutation ($h: ID!, $p: ID!) { startSession(harnessId: $h, input: { projectId: $p }) { ${SESSION_FIELDS} } }`,
      { h: harnessId, p: project.id },
    );
    sessionId = started.startSession.id;
    expect(sessionId.startsWith(`${harnessId}:`)).toBe(true);
    expect(started.startSession).toMatchObject({ origin: 'started', status: 'idle', project: { id: project.id }, harness: { id: harnessId } });
    expect(Buffer.from(started.startSession.enc, 'base64url').toString('utf8')).toBe(sessionId);
    sub = subscribeEvents(mesh, { sessionId });
    const accepted = await sendTurn(mesh, sessionId, firstText);
    expect(accepted.sessionId).toBe(sessionId);
    first = await takeUntil(sub, (e) => turnCompleted(e) && e.turnId === accepted.turnId);
    expect(first[0]).toMatchObject({ __typename: 'SessionCreated', seq: 1, origin: 'started' });
  } else {
    // The CLI mints its own id: adopt the session a task creates, following the harness's stream.
    sub = subscribeEvents(mesh, { harnessId });
    const { runTask } = await gqlData<{ runTask: { id: string; status: string; session: { id: string } | null; temporalWorkflowId: string; run: { id: string } } }>(
      mesh.gatewayUrl,
      'mutation ($h: ID!, $t: String!, $p: ID) { runTask(harnessId: $h, prompt: $t, projectId: $p) { id status temporalWorkflowId run { id } session { id } } }',
      { h: harnessId, t: firstText, p: project.id },
    );
    expect(runTask).toMatchObject({ status: 'RUNNING', session: null, run: { id: runTask.temporalWorkflowId } });
    first = await takeUntil(sub, turnCompleted, 90_000);
    expect(first[0]).toMatchObject({ __typename: 'SessionCreated', seq: 1, origin: 'task', taskId: runTask.id });
    sessionId = first[0]!.sessionId;
    expect(sessionId.startsWith(`${harnessId}:`)).toBe(true);
    const task = await waitTask(mesh, runTask.id);
    expect(task).toMatchObject({ status: 'SUCCEEDED', session: { id: sessionId } });
  }

  // The first turn: the CLI wrote the file with its own tool, and every event arrived in order.
  expectContiguous(first, sessionId, 1);
  const types = first.map((e) => e.__typename);
  expect(types).toEqual(expect.arrayContaining(['SessionCreated', 'ToolUse', 'ToolResult', 'AssistantDelta', 'TurnComplete']));
  expect(first.at(-1)).toMatchObject({ __typename: 'TurnComplete', status: 'COMPLETED' });
  const toolUse = first.find((e) => e.__typename === 'ToolUse')!;
  expect(first.find((e) => e.__typename === 'ToolResult' && e.toolUseId === toolUse.toolUseId)).toMatchObject({ isError: false });
  expect(first.filter((e) => e.__typename === 'AssistantDelta').map((e) => e.text).join('')).toContain(`DONE ${file}`);
  expect(existsSync(join(project.rootPath, file))).toBe(true);
  expect(await readFile(join(project.rootPath, file), 'utf8')).toBe(`written by ${harnessId}\n`);
  const before = (await sessionOf(mesh, sessionId))!;
  expect(before).toMatchObject({ turnInFlight: false, project: { id: project.id } });

  // The socket drops; a second turn runs while nobody listens.
  const lastCursor = first.at(-1)!.cursor;
  const lastSeq = first.at(-1)!.seq;
  await sub.drop();
  const second = await sendTurn(mesh, sessionId, `REASON second turn for ${harnessId}`);
  await waitIdle(mesh, sessionId, 90_000);

  // Resumed from the cursor: exactly what followed, in order, then live (nothing more pending).
  const resumed = subscribeEvents(mesh, { sessionId, after: lastCursor });
  const missed = await takeUntil(resumed, (e) => turnCompleted(e) && e.turnId === second.turnId);
  expect(missed[0]!.seq).toBe(lastSeq + 1);
  expectContiguous(missed, sessionId, lastSeq + 1);
  expect(missed.every((e) => e.turnId === second.turnId)).toBe(true);
  expect(missed.at(-1)).toMatchObject({ status: 'COMPLETED' });
  expect(missed.filter((e) => e.__typename === 'AssistantDelta').map((e) => e.text).join('')).toContain(`ECHO REASON second turn for ${harnessId}`);
  await new Promise((r) => setTimeout(r, 300));
  expect(resumed.pending()).toBe(0);
  await resumed.close();

  // The same native session took both turns: one SessionId, both prompts in its own transcript.
  const after = (await sessionOf(mesh, sessionId))!;
  expect(after.nativeId).toBe(before.nativeId);
  const transcript = await transcriptOf(mesh, sessionId);
  const userTexts = transcript.edges.filter((e) => e.node.role === 'user').map((e) => e.node.content);
  expect(userTexts.some((t) => t.includes(firstText))).toBe(true);
  expect(userTexts.some((t) => t.includes(`REASON second turn for ${harnessId}`))).toBe(true);
  const assistant = transcript.edges.filter((e) => e.node.role === 'assistant').map((e) => e.node.content).join('\n');
  expect(assistant).toContain(`DONE ${file}`);
  expect(transcript.edges.some((e) => e.node.role === 'tool')).toBe(true);

  // Pages: two at a time through to the end, the same entries in the same order.
  const paged: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await transcriptOf(mesh, sessionId, 2, cursor);
    paged.push(...page.edges.map((e) => e.node.id));
    if (!page.pageInfo.hasNextPage) break;
    cursor = page.pageInfo.endCursor!;
  }
  expect(paged).toEqual(transcript.edges.map((e) => e.node.id));

  // The session is listed for its harness and project.
  const listed = await gqlData<{ sessions: { edges: { node: { id: string } }[] } }>(
    mesh.gatewayUrl,
    'query ($h: ID, $p: ID) { sessions(harnessId: $h, projectId: $p) { edges { node { id } } } }',
    { h: harnessId, p: project.id },
  );
  expect(listed.sessions.edges.map((e) => e.node.id)).toContain(sessionId);
}

export async function waitTask(mesh: TestMesh, id: string, timeoutMs = 90_000): Promise<{ status: string; session: { id: string } | null; error: string | null }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await gql<{ task: { status: string; session: { id: string } | null; error: string | null } }>(mesh.gatewayUrl, 'query ($id: ID!) { task(id: $id) { status error session { id } } }', { id });
    const t = res.data?.task;
    if (t && t.status !== 'RUNNING') return t;
    if (Date.now() > deadline) throw new Error(`task ${id} still ${t?.status} (${JSON.stringify(res.errors)})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
