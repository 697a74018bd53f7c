import { execFile, execFileSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { groupAlive, harnessSettings, startHarnessRuntime, type HarnessRuntime } from '@keelson/harness';
import { parseEnv, searchAttributes } from '@keelson/schema';
import { serviceIdentity, silentLogger } from '@keelson/service';
import { connectClient, findTemporalCli } from '@keelson/temporal';
import { gql, gqlData } from '../support/client';
import {
  codes,
  createProject,
  expectContiguous,
  sendTurn,
  SESSION_FIELDS,
  sessionOf,
  startHarnessMesh,
  subscribeEvents,
  takeUntil,
  turnCompleted,
  waitIdle,
  waitTask,
  type HarnessMesh,
  type SessionData,
} from '../support/harness';
import { testTemporalAddress } from '../support/temporalServer';

jest.setTimeout(180_000);

const UUID = '0b9f6a4e-3c2d-4e1f-8a7b-6c5d4e3f2a1b';

// One mesh for the control plane's behaviours, run in order (the identity checks assert that
// nothing changed, so nothing runs beside them); the CLI scenarios run in clis.e2e.test.ts.
let h: HarnessMesh;
beforeAll(async () => {
  h = await startHarnessMesh([
    {
      name: 'retry-approved-bash',
      match: { contains: 'The user approved your Bash call' },
      reply: (ctx) => {
        const command = /"command":"([^"]+)"/.exec(ctx.userText)?.[1];
        return command ? [{ toolCall: { name: 'Bash', arguments: { command, description: 'retry' } } }] : undefined;
      },
    },
  ]);
});
afterAll(() => h?.teardown());

const run = promisify(execFile);

const RUN_TASK = `mutation ($h: ID!, $t: String!, $p: ID) {
  runTask(harnessId: $h, prompt: $t, projectId: $p) { id status temporalWorkflowId temporalRunId run { id } harness { id } session { id } }
}`;

interface TaskData {
  id: string;
  status: string;
  temporalWorkflowId: string;
  temporalRunId: string | null;
  run: { id: string };
  harness: { id: string };
  session: { id: string } | null;
}

/** Workflow ids `temporal workflow list` finds for a query (visibility trails a start by a moment). */
async function listed(query: string, want: string, attempts = 60): Promise<string[]> {
  const cli = await findTemporalCli();
  if (!cli) throw new Error('the temporal CLI is missing; globalSetup says how to build it');
  let ids: string[] = [];
  for (let attempt = 0; attempt < attempts && !ids.includes(want); attempt++) {
    if (attempt > 0) await new Promise((r) => setTimeout(r, 100));
    const { stdout } = await run(cli, ['workflow', 'list', '--address', testTemporalAddress(), '--query', query, '-o', 'json']);
    ids = (stdout.trim() ? (JSON.parse(stdout) as { execution: { workflowId: string } }[]) : []).map((r) => r.execution.workflowId);
  }
  return ids;
}

/** Processes of group `pgid` still alive (zombies waiting to be reaped do not count), as `ps` sees them. */
function membersOf(pgid: number): string[] {
  const out = execFileSync('ps', ['-eo', 'pid=,pgid=,stat=,comm='], { encoding: 'utf8' });
  return out
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f.length >= 4 && Number(f[1]) === pgid && !f[2]!.startsWith('Z'))
    .map((f) => f.join(' '));
}

describe('harness identity, capabilities and refusals through the gateway', () => {
  let projectId: string;

  beforeAll(async () => {
    projectId = (await createProject(h.mesh, 'identity')).id;
  });

  /** Rows and events of the control plane: what "nothing changed" is checked against. */
  async function state(): Promise<unknown> {
    const ds = h.mesh.sessions.runtime.dataSource;
    return {
      sessions: await ds.query('SELECT id, status, turns, turn_id, event_seq FROM harness_sessions ORDER BY id'),
      tasks: await ds.query('SELECT id, status FROM harness_tasks ORDER BY id'),
      events: await ds.query("SELECT count(*)::int AS n FROM events WHERE stream = 'harness'"),
    };
  }

  it('lists the eight harnesses in the seed\'s order with honest, computed capabilities', async () => {
    const { harnesses } = await gqlData<{
      harnesses: { id: string; installed: boolean; version: string | null; capabilities: Record<string, unknown> & { reasons: { capability: string; reason: string }[] }; taskExecutor: { implemented: boolean; reason: string | null } }[];
    }>(
      h.mesh.gatewayUrl,
      '{ harnesses { id installed version capabilities { interrupt resume approvals liveStream listSessions startSession attachments midTurnInput approvalsBeforeTool reasons { capability reason } } taskExecutor { implemented reason } } }',
    );
    expect(harnesses.map((x) => x.id)).toEqual(['claude-code', 'grok-build', 'kimi-code', 'hermes', 'codex', 'opencode', 'pi', 'qwen-code']);
    const by = Object.fromEntries(harnesses.map((x) => [x.id, x]));
    const flags = (id: string) => {
      const { reasons: _r, ...f } = by[id]!.capabilities;
      return f;
    };
    // No CLI takes input mid-turn as the mesh runs them (headless, stdin closed): steers queue as next turns.
    const allOn = { interrupt: true, resume: true, liveStream: true, listSessions: true, midTurnInput: false };
    // Only claude-code asks before a tool runs (its permission hook, served by this sessions service).
    expect(flags('claude-code')).toEqual({ ...allOn, approvals: true, startSession: true, attachments: false, approvalsBeforeTool: true });
    expect(flags('codex')).toEqual({ ...allOn, approvals: false, startSession: false, attachments: false, approvalsBeforeTool: false });
    expect(flags('opencode')).toEqual({ ...allOn, approvals: false, startSession: false, attachments: false, approvalsBeforeTool: false });
    expect(flags('pi')).toEqual({ ...allOn, approvals: false, startSession: true, attachments: true, approvalsBeforeTool: false });
    expect(flags('qwen-code')).toEqual({ ...allOn, approvals: false, startSession: true, attachments: false, approvalsBeforeTool: false });
    for (const id of ['claude-code', 'codex', 'opencode', 'pi', 'qwen-code']) {
      expect(by[id]).toMatchObject({ installed: true, taskExecutor: { implemented: true, reason: null } });
      expect(by[id]!.version).toMatch(/^\d+\.\d+\.\d+/);
    }
    for (const id of ['grok-build', 'kimi-code', 'hermes']) {
      expect(by[id]).toMatchObject({ installed: false, version: null, taskExecutor: { implemented: false } });
      expect(Object.values(flags(id))).toEqual(Array(9).fill(false));
      expect(by[id]!.capabilities.reasons).toHaveLength(9);
      expect(by[id]!.taskExecutor.reason).toMatch(/not on PATH|no headless/);
    }
    // Every false flag says why.
    expect(by.codex!.capabilities.reasons.find((r) => r.capability === 'startSession')!.reason).toMatch(/cannot pin/);
    expect(by.pi!.capabilities.reasons.find((r) => r.capability === 'approvals')!.reason).toMatch(/no permission gate/);
    expect(by['claude-code']!.capabilities.reasons.find((r) => r.capability === 'midTurnInput')!.reason).toMatch(/stdin closed.*next turn/);
    expect((await gqlData<{ harness: unknown }>(h.mesh.gatewayUrl, '{ harness(id: "vim") { id } }')).harness).toBeNull();
  });

  it('answers CAPABILITY_UNSUPPORTED (501) with the reason for startSession on codex and opencode, and for anything on grok-build, changing nothing', async () => {
    const before = await state();
    const start = (id: string) =>
      gql(h.mesh.gatewayUrl, 'mutation ($h: ID!, $p: ID!) { startSession(harnessId: $h, input: { projectId: $p }) { id } }', { h: id, p: projectId });
    for (const id of ['codex', 'opencode']) {
      const res = await start(id);
      expect(codes(res)).toEqual(['CAPABILITY_UNSUPPORTED']);
      expect(res.errors![0]!.extensions).toMatchObject({ status: 501, harnessId: id, capability: 'startSession' });
      expect(res.errors![0]!.message).toMatch(/cannot pin a new session id/);
    }
    const grok = `grok-build:${UUID}`;
    const attempts = [
      await start('grok-build'),
      await gql(h.mesh.gatewayUrl, 'mutation ($s: ID!) { resumeSession(id: $s) { id } }', { s: grok }),
      await gql(h.mesh.gatewayUrl, 'mutation ($s: ID!) { sendUserTurn(sessionId: $s, text: "hi") { turnId } }', { s: grok }),
      await gql(h.mesh.gatewayUrl, 'mutation ($s: ID!) { interruptSession(sessionId: $s) }', { s: grok }),
      await gql(h.mesh.gatewayUrl, 'mutation ($s: ID!) { resolveApproval(sessionId: $s, requestId: "r1", decision: APPROVE) }', { s: grok }),
      await gql(h.mesh.gatewayUrl, 'mutation ($p: ID) { runTask(harnessId: "grok-build", prompt: "hi", projectId: $p) { id } }', { p: projectId }),
    ];
    // The harness is refused before any lookup: whether the session exists does not matter.
    expect(attempts.map(codes)).toEqual(Array(6).fill(['CAPABILITY_UNSUPPORTED']));
    for (const res of attempts) {
      expect(res.errors![0]!.extensions).toMatchObject({ status: 501 });
      expect(res.errors![0]!.message).toMatch(/grok-build.*not on PATH|no headless/);
    }
    expect(await state()).toEqual(before);
  });

  it('rejects malformed SessionIds and enc values with BAD_USER_INPUT, changing nothing', async () => {
    const before = await state();
    const malformed = [
      'no-colon-here',
      ':abc',
      'claude-code:',
      'vim:abc',
      `kimi-code-is-not-canonical`,
      `session_${UUID}`,
      'claude-code:a\u0000b',
      `codex:${'x'.repeat(600)}`,
    ];
    for (const id of malformed) {
      for (const [query, vars] of [
        ['query ($s: ID!) { session(id: $s) { id } }', { s: id }],
        ['mutation ($s: ID!) { sendUserTurn(sessionId: $s, text: "x") { turnId } }', { s: id }],
        ['mutation ($s: ID!) { interruptSession(sessionId: $s) }', { s: id }],
        ['mutation ($s: ID!) { resumeSession(id: $s) { id } }', { s: id }],
      ] as const) {
        const res = await gql(h.mesh.gatewayUrl, query, vars);
        expect({ id, query, codes: codes(res) }).toEqual({ id, query, codes: ['BAD_USER_INPUT'] });
        expect(res.errors![0]!.extensions!.status).toBe(400);
      }
    }
    const kimi = await gql(h.mesh.gatewayUrl, 'query ($s: ID!) { session(id: $s) { id } }', { s: `session_${UUID}` });
    expect(kimi.errors![0]!.message).toMatch(/must be sent canonical/);
    // Seed 002: split on the first colon only, the native part may hold `:` and `/`. Any native part is
    // looked up as given (drivers check a shape before building anything from it): nothing holds these.
    for (const id of ['hermes:a:b/c', 'codex:a:b/c:d', 'claude-code:not-a-uuid', 'claude-code:../../../etc/passwd', `claude-code:${UUID}/../x`, `pi:${UUID.toUpperCase()}`, 'opencode:ses_x\' or 1=1 --']) {
      const looked = await gql(h.mesh.gatewayUrl, 'query ($s: ID!) { session(id: $s) { id } }', { s: id });
      expect({ id, errors: looked.errors, session: looked.data?.session }).toEqual({ id, errors: undefined, session: null });
    }
    // A turn to one is NOT_FOUND (on the harnesses that can take turns here; the others answer
    // CAPABILITY_UNSUPPORTED first, whether or not the session exists).
    for (const id of ['claude-code:a:b/c', 'claude-code:../../../etc/passwd', `pi:${UUID.toUpperCase()}`, 'pi:x:y/z']) {
      const turn = await gql(h.mesh.gatewayUrl, 'mutation ($s: ID!) { sendUserTurn(sessionId: $s, text: "x") { turnId } }', { s: id });
      expect({ id, codes: codes(turn) }).toEqual({ id, codes: ['NOT_FOUND'] });
    }

    const badEnc = ['', 'a', 'YQ=', 'YQ==', 'Y+Q', 'Y/Q', '!!!', 'YR', Buffer.from('no colon').toString('base64url'), Buffer.from('vim:abc').toString('base64url'), Buffer.from([0xff, 0xfe, 0x3a]).toString('base64url')];
    for (const enc of badEnc) {
      const res = await gql(h.mesh.gatewayUrl, 'query ($e: String!) { sessionByEnc(enc: $e) { id } }', { e: enc });
      expect({ enc, codes: codes(res) }).toEqual({ enc, codes: ['BAD_USER_INPUT'] });
    }
    const sub = subscribeEvents(h.mesh, { sessionId: 'nope' });
    const [rejected] = await sub.take(1);
    expect(codes(rejected!)).toEqual(['BAD_USER_INPUT']);
    await sub.close();
    const cursor = subscribeEvents(h.mesh, { harnessId: 'pi', after: 'not-a-cursor' });
    expect(codes((await cursor.take(1))[0]!)).toEqual(['BAD_USER_INPUT']);
    await cursor.close();
    expect(await state()).toEqual(before);
  });

  it('resolves enc and bare UUIDs (probed across the UUID-shaped stores in order) to the canonical session', async () => {
    const start = async (id: string) =>
      (await gqlData<{ startSession: SessionData }>(h.mesh.gatewayUrl, `mutation ($h: ID!, $p: ID!) { startSession(harnessId: $h, input: { projectId: $p }) { ${SESSION_FIELDS} } }`, { h: id, p: projectId }))
        .startSession;
    const claude = await start('claude-code');
    const qwen = await start('qwen-code');
    const byEnc = await gqlData<{ sessionByEnc: { id: string } }>(h.mesh.gatewayUrl, 'query ($e: String!) { sessionByEnc(enc: $e) { id } }', { e: claude.enc });
    expect(byEnc.sessionByEnc.id).toBe(claude.id);
    expect(claude.enc).toBe(Buffer.from(claude.id, 'utf8').toString('base64url'));
    expect(claude.enc).not.toMatch(/[=+/]/);
    const bare = async (native: string) => (await gqlData<{ session: { id: string } | null }>(h.mesh.gatewayUrl, 'query ($s: ID!) { session(id: $s) { id } }', { s: native })).session;
    expect(await bare(claude.nativeId)).toEqual({ id: claude.id });
    expect(await bare(qwen.nativeId)).toEqual({ id: qwen.id });
    expect(await bare(UUID)).toBeNull();
    // The legacy Claude transcript path reads as its SessionId.
    expect(await bare(`/home/u/.claude/projects/-work-x/${claude.nativeId}.jsonl`)).toEqual({ id: claude.id });
    expect(await bare(`claude-code:${UUID}`)).toBeNull();
  });
});

describe('confinement: a session runs in its project root or a live worktree lease', () => {
  it('starts a session in a leased worktree, and refuses its turns once the lease is released', async () => {
    const project = await createProject(h.mesh, 'leased');
    const { acquireWorkspace } = await gqlData<{ acquireWorkspace: { id: string; path: string } }>(
      h.mesh.gatewayUrl,
      'mutation ($p: ID!) { acquireWorkspace(projectId: $p, purpose: "harness") { id path } }',
      { p: project.id },
    );
    const { startSession } = await gqlData<{ startSession: SessionData }>(
      h.mesh.gatewayUrl,
      `mutation ($p: ID!, $w: ID) { startSession(harnessId: "qwen-code", input: { projectId: $p, workspaceId: $w }) { ${SESSION_FIELDS} } }`,
      { p: project.id, w: acquireWorkspace.id },
    );
    expect(startSession.cwd).toBe(realpathSync(acquireWorkspace.path));
    const foreign = await gql(h.mesh.gatewayUrl, 'mutation ($p: ID!) { startSession(harnessId: "qwen-code", input: { projectId: $p, workspaceId: "00000000-0000-4000-8000-000000000000" }) { id } }', { p: project.id });
    expect(codes(foreign)).toEqual(['NOT_FOUND']);
    await gqlData(h.mesh.gatewayUrl, 'mutation ($w: ID!) { releaseWorkspace(id: $w) }', { w: acquireWorkspace.id });
    const refused = await gql(h.mesh.gatewayUrl, 'mutation ($s: ID!) { sendUserTurn(sessionId: $s, text: "hi") { turnId } }', { s: startSession.id });
    expect(codes(refused)).toEqual(['FORBIDDEN']);
    expect(refused.errors![0]!.message).toMatch(/not a live workspace lease/);
    expect(await sessionOf(h.mesh, startSession.id)).toMatchObject({ turnInFlight: false, status: 'idle' });
  });
});

describe('claude-code turns: in flight, interrupt, approvals', () => {
  let other: HarnessRuntime;
  let projectId: string;
  let healthUrl: string;

  beforeAll(async () => {
    // A second control plane on the same database, in this process but with its own pool and
    // listener: another holder, as far as leases go.
    other = await startHarnessRuntime({
      databaseUrl: h.mesh.db.url,
      settings: harnessSettings(parseEnv(h.mesh.rawEnv), h.mesh.rawEnv),
      projects: { url: h.mesh.subgraphUrls.projects!, identity: serviceIdentity(h.mesh.security.assertions, 'sessions') },
      log: silentLogger(),
      listenerName: 'keelson-test-other',
    });
    projectId = (await createProject(h.mesh, 'claude-control')).id;
    healthUrl = `${h.model.url}/_keelson/health`;
  });
  afterAll(async () => {
    await other?.stop();
  });

  async function startSession(): Promise<string> {
    const { startSession } = await gqlData<{ startSession: { id: string } }>(
      h.mesh.gatewayUrl,
      `mutation ($p: ID!) { startSession(harnessId: "claude-code", input: { projectId: $p }) { ${SESSION_FIELDS} } }`,
      { p: projectId },
    );
    return startSession.id;
  }

  it('refuses a second turn while one runs (TURN_IN_FLIGHT, also from a second control plane on the database), then interrupts it leaving no process of its group', async () => {
    const sessionId = await startSession();
    const sub = subscribeEvents(h.mesh, { sessionId });
    const turn = await sendTurn(h.mesh, sessionId, 'SLOW 30000 a long, slow answer that streams for thirty seconds');
    // Streaming has begun.
    const early = await takeUntil(sub, (e) => e.__typename === 'AssistantDelta');
    const [held] = h.mesh.sessions.runtime.plane.localTurns().filter((t) => t.sessionId === sessionId);
    expect(held).toBeDefined();
    expect(groupAlive(held!.pgid)).toBe(true);
    expect(membersOf(held!.pgid).length).toBeGreaterThan(0);
    const before = await sessionOf(h.mesh, sessionId);
    expect(before).toMatchObject({ turnInFlight: true, currentTurnId: turn.turnId, status: 'running' });

    const second = await gql(h.mesh.gatewayUrl, 'mutation ($s: ID!) { sendUserTurn(sessionId: $s, text: "again") { turnId } }', { s: sessionId });
    expect(codes(second)).toEqual(['TURN_IN_FLIGHT']);
    expect(second.errors![0]!.extensions).toMatchObject({ status: 409, turnId: turn.turnId });
    await expect(other.plane.sendUserTurn(sessionId, 'from another control plane')).rejects.toMatchObject({ code: 'TURN_IN_FLIGHT' });
    // Nothing changed: the same turn holds the session, no second CLI runs, no event was written for it.
    expect(await sessionOf(h.mesh, sessionId)).toEqual(before);
    expect(h.mesh.sessions.runtime.plane.localTurns().filter((t) => t.sessionId === sessionId)).toHaveLength(1);
    expect(other.plane.localTurns()).toEqual([]);

    const { interruptSession } = await gqlData<{ interruptSession: boolean }>(h.mesh.gatewayUrl, 'mutation ($s: ID!) { interruptSession(sessionId: $s) }', { s: sessionId });
    expect(interruptSession).toBe(true);
    const rest = await takeUntil(sub, turnCompleted, 20_000);
    expect(rest.at(-1)).toMatchObject({ __typename: 'TurnComplete', status: 'INTERRUPTED', turnId: turn.turnId });
    expectContiguous([...early, ...rest], sessionId, 1);
    expect(groupAlive(held!.pgid)).toBe(false);
    expect(membersOf(held!.pgid)).toEqual([]);
    expect(await sessionOf(h.mesh, sessionId)).toMatchObject({ turnInFlight: false, status: 'idle' });
    // Nothing left to interrupt.
    expect((await gqlData<{ interruptSession: boolean }>(h.mesh.gatewayUrl, 'mutation ($s: ID!) { interruptSession(sessionId: $s) }', { s: sessionId })).interruptSession).toBe(false);
    await sub.close();
  });

  it('interrupts a turn held by another control plane through the lease (its holder kills the group)', async () => {
    const sessionId = await startSession();
    const sub = subscribeEvents(h.mesh, { sessionId });
    const turn = await sendTurn(h.mesh, sessionId, 'SLOW 30000 another long answer');
    await takeUntil(sub, (e) => e.__typename === 'AssistantDelta');
    const [held] = h.mesh.sessions.runtime.plane.localTurns().filter((t) => t.sessionId === sessionId);
    expect(await other.plane.interruptSession(sessionId)).toBe(true);
    const rest = await takeUntil(sub, turnCompleted, 20_000);
    expect(rest.at(-1)).toMatchObject({ status: 'INTERRUPTED', turnId: turn.turnId });
    expect(membersOf(held!.pgid)).toEqual([]);
    await sub.close();
  });

  it('asks before a tool runs (ApprovalRequest while the turn waits); APPROVE through resolveApproval runs it in the same turn, DENY keeps it from running', async () => {
    const sessionId = await startSession();
    const sub = subscribeEvents(h.mesh, { sessionId });
    const ask = `CALL_TOOL Bash {"command":"curl -s ${healthUrl}","description":"probe"}`;
    const first = await sendTurn(h.mesh, sessionId, ask);
    const asked = await takeUntil(sub, (e) => e.__typename === 'ApprovalRequest');
    const request = asked.at(-1)!;
    expect(request).toMatchObject({ toolName: 'Bash', input: { command: `curl -s ${healthUrl}` }, turnId: first.turnId });
    expect(request.requestId).toMatch(/^live:/);
    // Nothing ran yet: the tool waits for the answer inside the turn.
    expect(asked.some((e) => e.__typename === 'ToolResult' || e.__typename === 'TurnComplete')).toBe(false);
    const pending = await gqlData<{ session: { pendingApprovals: { requestId: string; toolName: string }[]; turnInFlight: boolean } }>(
      h.mesh.gatewayUrl,
      'query ($s: ID!) { session(id: $s) { turnInFlight pendingApprovals { requestId toolName } } }',
      { s: sessionId },
    );
    expect(pending.session).toEqual({ turnInFlight: true, pendingApprovals: [{ requestId: request.requestId, toolName: 'Bash' }] });

    const approved = await gqlData<{ resolveApproval: boolean }>(
      h.mesh.gatewayUrl,
      'mutation ($s: ID!, $r: ID!) { resolveApproval(sessionId: $s, requestId: $r, decision: APPROVE) }',
      { s: sessionId, r: request.requestId },
    );
    expect(approved.resolveApproval).toBe(true);
    const rest = await takeUntil(sub, turnCompleted);
    expect(rest[0]).toMatchObject({ __typename: 'ApprovalResolved', requestId: request.requestId, decision: 'APPROVE' });
    const result = rest.find((e) => e.__typename === 'ToolResult')!;
    expect(result).toMatchObject({ isError: false });
    expect(result.output).toContain('"ok":true');
    expect(rest.some((e) => e.__typename === 'ApprovalRequest')).toBe(false);
    expect(rest.at(-1)).toMatchObject({ status: 'COMPLETED', turnId: first.turnId });

    // Answered once only.
    const again = await gql(h.mesh.gatewayUrl, 'mutation ($s: ID!, $r: ID!) { resolveApproval(sessionId: $s, requestId: $r, decision: DENY) }', { s: sessionId, r: request.requestId });
    expect(codes(again)).toEqual(['CONFLICT']);
    const unknown = await gql(h.mesh.gatewayUrl, 'mutation ($s: ID!) { resolveApproval(sessionId: $s, requestId: "nope", decision: DENY) }', { s: sessionId });
    expect(codes(unknown)).toEqual(['NOT_FOUND']);

    // DENY: the tool does not run, and the turn goes on without it (no approval is asked after the fact).
    await waitIdle(h.mesh, sessionId);
    const second = await sendTurn(h.mesh, sessionId, ask);
    const request2 = (await takeUntil(sub, (e) => e.__typename === 'ApprovalRequest')).at(-1)!;
    await gqlData(h.mesh.gatewayUrl, 'mutation ($s: ID!, $r: ID!) { resolveApproval(sessionId: $s, requestId: $r, decision: DENY) }', { s: sessionId, r: request2.requestId });
    const denied = await takeUntil(sub, (e) => turnCompleted(e) && e.turnId === second.turnId);
    expect(denied[0]).toMatchObject({ __typename: 'ApprovalResolved', decision: 'DENY', requestId: request2.requestId });
    expect(denied.filter((e) => e.__typename === 'ToolResult')).toEqual([expect.objectContaining({ isError: true })]);
    expect(denied.some((e) => e.__typename === 'ApprovalRequest')).toBe(false);
    await waitIdle(h.mesh, sessionId);
    await sub.close();
  });
});

describe('runTask: a harness run headless as the Temporal workflow harnessTask', () => {
  let project: { id: string; rootPath: string };

  beforeAll(async () => {
    project = await createProject(h.mesh, 'tasks');
  });

  it('runs pi in the project with KEELSON_TASK_ID set, and `temporal workflow list` finds it by kind, harness and project', async () => {
    const { runTask } = await gqlData<{ runTask: TaskData }>(h.mesh.gatewayUrl, RUN_TASK, {
      h: 'pi',
      t: 'CALL_TOOL bash {"command":"printenv KEELSON_TASK_ID > task-id.txt"}',
      p: project.id,
    });
    expect(runTask).toMatchObject({ status: 'RUNNING', harness: { id: 'pi' }, temporalWorkflowId: `harness-task-${runTask.id}`, run: { id: `harness-task-${runTask.id}` } });
    // pi pins its session by file path: the task carries it from the start.
    expect(runTask.session?.id).toMatch(/^pi:[0-9a-f-]{36}$/);
    const done = await waitTask(h.mesh, runTask.id);
    expect(done).toMatchObject({ status: 'SUCCEEDED', session: { id: runTask.session!.id } });
    expect((await readFile(join(project.rootPath, 'task-id.txt'), 'utf8')).trim()).toBe(runTask.id);

    const query = `${searchAttributes.kind}='task' AND ${searchAttributes.harness}='pi' AND ${searchAttributes.project}='${project.id}'`;
    expect(await listed(query, runTask.temporalWorkflowId)).toContain(runTask.temporalWorkflowId);
    expect(await listed(`${searchAttributes.kind}='task' AND ${searchAttributes.harness}='claude-code'`, runTask.temporalWorkflowId, 1)).not.toContain(runTask.temporalWorkflowId);

    const client = await connectClient({ address: testTemporalAddress() });
    try {
      const description = await client.workflow.getHandle(runTask.temporalWorkflowId).describe();
      expect(description.type).toBe('harnessTask');
      expect(description.status.name).toBe('COMPLETED');
      expect(description.memo).toEqual({ title: 'pi task: CALL_TOOL bash {"command":"printenv KEELSON_TASK_ID > task-id.txt"}' });
      // What the Temporal UI lists it under, and its details.
      expect(await description.staticSummary()).toMatch(/^pi task · [0-9a-f]{8}: CALL_TOOL bash /);
      expect(await description.staticDetails()).toMatch(/^\*\*pi task\*\* `[0-9a-f-]{36}`[\s\S]*GraphQL: `\{ task\(id: "[0-9a-f-]{36}"\) \{ status error \} \}`$/);
    } finally {
      await client.connection.close();
    }
  });

  it('cancels a running task: the activity kills the CLI\'s process group, the turn ends INTERRUPTED and the task CANCELLED', async () => {
    const { runTask } = await gqlData<{ runTask: TaskData }>(h.mesh.gatewayUrl, RUN_TASK, { h: 'claude-code', t: 'SLOW 30000 a task that takes a while', p: project.id });
    const sessionId = runTask.session!.id;
    const sub = subscribeEvents(h.mesh, { sessionId });
    await takeUntil(sub, (e) => e.__typename === 'AssistantDelta');
    const [held] = h.mesh.sessions.runtime.plane.localTurns().filter((t) => t.sessionId === sessionId);
    expect(groupAlive(held!.pgid)).toBe(true);

    const canceller = await connectClient({ address: testTemporalAddress() });
    try {
      await canceller.workflow.getHandle(runTask.temporalWorkflowId).cancel();
    } finally {
      await canceller.connection.close();
    }
    const rest = await takeUntil(sub, turnCompleted, 30_000);
    expect(rest.at(-1)).toMatchObject({ status: 'INTERRUPTED', taskId: runTask.id });
    expect(groupAlive(held!.pgid)).toBe(false);
    expect(await waitTask(h.mesh, runTask.id)).toMatchObject({ status: 'CANCELLED' });
    const check = await connectClient({ address: testTemporalAddress() });
    try {
      const handle = check.workflow.getHandle(runTask.temporalWorkflowId);
      await handle.result().catch(() => undefined);
      expect((await handle.describe()).status.name).toBe('CANCELLED');
    } finally {
      await check.connection.close();
    }
    await sub.close();
  });

  it('refuses harnesses without a task executor (CAPABILITY_UNSUPPORTED) and tasks without a project, starting nothing', async () => {
    const grok = await gql(h.mesh.gatewayUrl, RUN_TASK, { h: 'grok-build', t: 'hello', p: project.id });
    expect(codes(grok)).toEqual(['CAPABILITY_UNSUPPORTED']);
    expect(grok.errors![0]!.extensions).toMatchObject({ status: 501 });
    expect(grok.errors![0]!.message).toMatch(/grok-build/);
    const noProject = await gql(h.mesh.gatewayUrl, RUN_TASK, { h: 'pi', t: 'hello' });
    expect(codes(noProject)).toEqual(['BAD_USER_INPUT']);
    const unknownHarness = await gql(h.mesh.gatewayUrl, RUN_TASK, { h: 'vim', t: 'hello', p: project.id });
    expect(codes(unknownHarness)).toEqual(['BAD_USER_INPUT']);
    const [{ n }] = (await h.mesh.sessions.runtime.dataSource.query("SELECT count(*)::int AS n FROM harness_tasks WHERE harness_id IN ('grok-build', 'vim') OR project_id IS NULL")) as { n: number }[];
    expect(n).toBe(0);
    expect(existsSync(join(project.rootPath, 'hello'))).toBe(false);
  });
});
