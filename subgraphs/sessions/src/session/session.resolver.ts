import { byId, IDEMPOTENCY_KEY, whole } from '@keelson/platform';
import { decodeEnc, encSessionId, requireHarnessId, uploadOwner, type HarnessId, type SessionView } from '@keelson/harness';
import { parseInput, RequiresScope } from '@keelson/kit';
import { actorOf, approvalDecisions, MeshError, type ApprovalDecision } from '@keelson/schema';
import { Arg, Ctx, FieldResolver, ID, Int, Mutation, Query, registerEnumType, Resolver, Root } from 'type-graphql';
import { z } from 'zod';
import { sessionsLoaders, type SessionsContext } from '../context';
import { Project } from '../federation/stubs.type';
import { Harness } from '../harness/harness.type';
import { harnessOf } from '../harness/harness.resolver';
import { Task } from '../task/task.type';
import { toTask } from '../task/task.type';
import {
  attachmentsSchema,
  optionalUuidSchema,
  transcriptPageArgsSchema,
  requestIdSchema,
  StartSessionInput,
  startSessionInputSchema,
  choiceSchema,
  turnTextSchema,
} from './session.input';
import {
  HarnessSession,
  HarnessSessionConnection,
  HarnessApproval,
  HarnessPrompt,
  PromptOption,
  toSession,
  TranscriptConnection,
  TranscriptEntry,
  TurnAccepted,
} from './session.type';

export const ApprovalDecisionEnum = Object.fromEntries(approvalDecisions.map((d) => [d, d])) as { [K in ApprovalDecision]: K };
registerEnumType(ApprovalDecisionEnum, { name: 'ApprovalDecision', description: 'The answer to an ApprovalRequest.' });

const sessionIdArg = z.string().min(1).max(2048);

/** Opaque session-listing cursor: the position (activity time, id) of the last session seen. */
function sessionCursor(s: HarnessSession): string {
  return Buffer.from(`session:${s.updatedAt?.getTime() ?? 0}:${s.id}`, 'utf8').toString('base64url');
}

function decodeSessionCursor(after: string): { at: number; id: string } {
  const m = /^session:(0|[1-9][0-9]{0,15}):(.+)$/s.exec(Buffer.from(after, 'base64url').toString('utf8'));
  if (!m || Buffer.from(`session:${m[1]}:${m[2]}`, 'utf8').toString('base64url') !== after) {
    throw new MeshError('BAD_USER_INPUT', 'after: expected a cursor previously received from this connection');
  }
  return { at: Number(m[1]), id: m[2]! };
}

function toEntry(e: { id: string; role: string; content: string; toolCalls?: unknown; createdAt: Date | null; metadata?: unknown }): TranscriptEntry {
  return Object.assign(new TranscriptEntry(), { id: e.id, role: e.role, content: e.content, toolCalls: e.toolCalls ?? null, createdAt: e.createdAt, metadata: e.metadata ?? null });
}

@Resolver(() => HarnessSession)
export class SessionResolver {
  @RequiresScope('read')
  @Query(() => HarnessSessionConnection, {
    description: "Sessions the mesh started or adopted plus what each harness's native store holds, most recently active first.",
  })
  async sessions(
    @Ctx() ctx: SessionsContext,
    @Arg('harnessId', () => ID, { nullable: true }) harnessId?: string | null,
    @Arg('projectId', () => ID, { nullable: true }) projectId?: string | null,
    @Arg('first', () => Int, { nullable: true }) first?: number | null,
    @Arg('after', () => String, { nullable: true }) after?: string | null,
  ): Promise<HarnessSessionConnection> {
    const page = parseInput(transcriptPageArgsSchema, { first, after }, 'page');
    const harness = harnessId == null ? null : requireHarnessId(harnessId);
    const project = parseInput(optionalUuidSchema, projectId, 'projectId');
    const from = page.after ? decodeSessionCursor(page.after) : null;
    const all = (await ctx.services.plane.listSessions({ harnessId: harness, projectId: project })).map(toSession);
    const rest = from ? all.filter((s) => (s.updatedAt?.getTime() ?? 0) < from.at || ((s.updatedAt?.getTime() ?? 0) === from.at && s.id > from.id)) : all;
    const nodes = rest.slice(0, page.first);
    const edges = nodes.map((node) => ({ cursor: sessionCursor(node), node }));
    return { edges, pageInfo: { hasNextPage: rest.length > nodes.length, endCursor: edges.at(-1)?.cursor ?? null } };
  }

  @RequiresScope('read')
  @Query(() => HarnessSession, {
    nullable: true,
    description: 'One session by SessionId (a superseded id resolves to its successor; a bare UUID is probed across the UUID-shaped stores in order). Malformed ids are BAD_USER_INPUT.',
  })
  async session(@Ctx() ctx: SessionsContext, @Arg('id', () => ID) id: string): Promise<HarnessSession | null> {
    const view = await ctx.services.plane.resolve(parseInput(sessionIdArg, id, 'id'), 'id');
    return view ? toSession(view) : null;
  }

  @RequiresScope('read')
  @Query(() => HarnessSession, { nullable: true, description: 'One session by `enc` (unpadded base64url of its SessionId, as in gateway paths).' })
  async sessionByEnc(@Ctx() ctx: SessionsContext, @Arg('enc', () => String) enc: string): Promise<HarnessSession | null> {
    const parsed = decodeEnc(enc, 'enc');
    const view = await ctx.services.plane.resolve(parsed.sessionId, 'enc');
    return view ? toSession(view) : null;
  }

  @RequiresScope('read')
  @Query(() => [TranscriptEntry], { description: "Transcript entries by id (memory capture fetches the bodies TRANSCRIPT_APPENDED names); unknown ids are left out." })
  async transcriptEntries(
    @Ctx() ctx: SessionsContext,
    @Arg('sessionId', () => ID) sessionId: string,
    @Arg('ids', () => [ID]) ids: string[],
  ): Promise<TranscriptEntry[]> {
    const wanted = parseInput(z.array(z.string().min(1).max(512)).max(1000), ids, 'ids');
    return (await ctx.services.plane.transcriptEntries(parseInput(sessionIdArg, sessionId, 'sessionId'), wanted)).map(toEntry);
  }

  @RequiresScope('operate')
  @Mutation(() => HarnessSession, { description: 'A new session whose id the mesh pins (claude-code, qwen-code; pi by file path). Elsewhere CAPABILITY_UNSUPPORTED with the reason.' })
  async startSession(
    @Ctx() ctx: SessionsContext,
    @Arg('harnessId', () => ID) harnessId: string,
    @Arg('input', () => StartSessionInput, { nullable: true }) input?: StartSessionInput | null,
    @Arg('idempotencyKey', () => String, { nullable: true, description: IDEMPOTENCY_KEY }) idempotencyKey?: string | null,
  ): Promise<HarnessSession> {
    const id = requireHarnessId(harnessId);
    // Capability first: an unsupported harness answers 501 whatever the input.
    const report = await ctx.services.plane.capabilities(id);
    if (!report.flags.startSession) {
      throw new MeshError('CAPABILITY_UNSUPPORTED', `startSession is not supported for ${id}: ${report.reasons.startSession}`, { harnessId: id, capability: 'startSession' });
    }
    const parsed = parseInput(startSessionInputSchema, input ? { ...input } : undefined, 'input');
    const call = { caller: ctx.caller, mutation: 'startSession', key: idempotencyKey, input: { harnessId: id, input: parsed ?? null } };
    const sessionById = byId(async (sessionId) => {
      const view = await ctx.services.plane.resolve(sessionId);
      return view ? toSession(view) : null;
    });
    return ctx.services.idempotency.run(call, sessionById, async () => {
      const record = await ctx.services.plane.startSession(id, parsed);
      return toSession({ id: record.id, harnessId: record.harnessId, nativeId: record.nativeId, record, native: null });
    });
  }

  @RequiresScope('operate')
  @Mutation(() => HarnessSession, { description: 'Makes a session the mesh\'s: one it knows, or one in its harness\'s native store (adopted into the project whose directory it ran in).' })
  async resumeSession(@Ctx() ctx: SessionsContext, @Arg('id', () => ID) id: string): Promise<HarnessSession> {
    const record = await ctx.services.plane.resumeSession(parseInput(sessionIdArg, id, 'id'));
    const view = await ctx.services.plane.resolve(record.id);
    return toSession(view ?? { id: record.id, harnessId: record.harnessId, nativeId: record.nativeId, record, native: null });
  }

  @RequiresScope('operate')
  @Mutation(() => TurnAccepted, { description: 'Runs one headless turn resuming the native session; returns once the CLI runs. TURN_IN_FLIGHT while another turn holds the session.' })
  async sendUserTurn(
    @Ctx() ctx: SessionsContext,
    @Arg('sessionId', () => ID) sessionId: string,
    @Arg('text', () => String) text: string,
    @Arg('attachments', () => [String], { nullable: true, description: 'Files for the turn: upload ids (POST /api/uploads, your own) or paths inside the session directory.' }) attachments?: string[] | null,
    @Arg('idempotencyKey', () => String, { nullable: true, description: IDEMPOTENCY_KEY }) idempotencyKey?: string | null,
    @Arg('model', () => String, { nullable: true, description: "This turn's model, else the session's, else the CLI's configured one (Harness.models)." }) model?: string | null,
    @Arg('effort', () => String, { nullable: true, description: "This turn's reasoning effort, else the session's (Harness.efforts; CAPABILITY_UNSUPPORTED where there are none)." }) effort?: string | null,
  ): Promise<TurnAccepted> {
    const id = parseInput(sessionIdArg, sessionId, 'sessionId');
    const body = parseInput(turnTextSchema, text, 'text');
    const files = parseInput(attachmentsSchema, attachments, 'attachments');
    const choice = { model: parseInput(choiceSchema.nullish(), model, 'model') ?? null, effort: parseInput(choiceSchema.nullish(), effort, 'effort') ?? null };
    const call = { caller: ctx.caller, mutation: 'sendUserTurn', key: idempotencyKey, input: { sessionId: id, text: body, attachments: files ?? null, ...(choice.model ? { model: choice.model } : {}), ...(choice.effort ? { effort: choice.effort } : {}) } };
    const accepted = whole((json) => {
      const saved = json as { sessionId: string; turnId: string; acceptedAt: string };
      return Object.assign(new TurnAccepted(), { ...saved, acceptedAt: new Date(saved.acceptedAt) });
    });
    return ctx.services.idempotency.run(call, accepted, async () => Object.assign(new TurnAccepted(), await ctx.services.plane.sendUserTurn(id, body, files, choice, uploadOwner(actorOf(ctx.caller)))));
  }

  @RequiresScope('operate')
  @Mutation(() => Boolean, { description: "Ends the in-flight turn (its whole process group); TurnComplete (INTERRUPTED) follows. False when no turn was in flight." })
  interruptSession(@Ctx() ctx: SessionsContext, @Arg('sessionId', () => ID) sessionId: string): Promise<boolean> {
    return ctx.services.plane.interruptSession(parseInput(sessionIdArg, sessionId, 'sessionId'));
  }

  @RequiresScope('operate')
  @Mutation(() => Boolean, { description: 'Answers an ApprovalRequest: APPROVE re-runs the session with the tool allowed; DENY records the answer.' })
  resolveApproval(
    @Ctx() ctx: SessionsContext,
    @Arg('sessionId', () => ID) sessionId: string,
    @Arg('requestId', () => ID) requestId: string,
    @Arg('decision', () => ApprovalDecisionEnum) decision: ApprovalDecision,
  ): Promise<boolean> {
    return ctx.services.plane.resolveApproval(parseInput(sessionIdArg, sessionId, 'sessionId'), parseInput(requestIdSchema, requestId, 'requestId'), decision);
  }

  @RequiresScope('operate')
  @Mutation(() => Boolean, { description: 'Answers a PromptRequest (a question the CLI asked): the answer runs as the session\'s next turn. TURN_IN_FLIGHT while a turn runs; CONFLICT once answered.' })
  async answerPrompt(
    @Ctx() ctx: SessionsContext,
    @Arg('sessionId', () => ID) sessionId: string,
    @Arg('promptId', () => ID) promptId: string,
    @Arg('text', () => String) text: string,
  ): Promise<boolean> {
    await ctx.services.plane.answerPrompt(parseInput(sessionIdArg, sessionId, 'sessionId'), parseInput(requestIdSchema, promptId, 'promptId'), parseInput(turnTextSchema, text, 'text'));
    return true;
  }

  @FieldResolver(() => String, { description: 'Unpadded base64url of the SessionId (gateway path parameter).' })
  enc(@Root() s: HarnessSession): string {
    return encSessionId(s.id);
  }

  @FieldResolver(() => Harness)
  harness(@Root() s: HarnessSession): Harness {
    return harnessOf(s.harnessId as HarnessId, s.view);
  }

  @FieldResolver(() => Project, { nullable: true })
  project(@Root() s: HarnessSession): Project | null {
    return s.projectId ? Object.assign(new Project(), { id: s.projectId }) : null;
  }

  @FieldResolver(() => Task, { nullable: true, description: 'The task that spawned the session, if any.' })
  async task(@Root() s: HarnessSession, @Ctx() ctx: SessionsContext): Promise<Task | null> {
    if (!s.taskId) return null;
    const t = await sessionsLoaders(ctx).task.load(s.taskId);
    return t ? toTask(t) : null;
  }

  @FieldResolver(() => [String], { description: 'Earlier SessionIds of this session (rotation); each resolves here.' })
  aliases(@Root() s: HarnessSession, @Ctx() ctx: SessionsContext): Promise<string[]> {
    return sessionsLoaders(ctx).aliases.load(s.id);
  }

  @FieldResolver(() => [HarnessApproval], { description: 'Permission requests waiting for resolveApproval.' })
  async pendingApprovals(@Root() s: HarnessSession, @Ctx() ctx: SessionsContext): Promise<HarnessApproval[]> {
    if (!s.view.record) return [];
    return (await sessionsLoaders(ctx).approvals.load(s.id)).map((a) =>
      Object.assign(new HarnessApproval(), { requestId: a.requestId, toolName: a.toolName, input: a.toolInput, turnId: a.turnId, createdAt: a.createdAt }),
    );
  }

  @FieldResolver(() => [HarnessPrompt], { description: 'Questions the CLI asked that wait for answerPrompt.' })
  async pendingPrompts(@Root() s: HarnessSession, @Ctx() ctx: SessionsContext): Promise<HarnessPrompt[]> {
    if (!s.view.record) return [];
    return (await sessionsLoaders(ctx).prompts.load(s.id)).map((p) =>
      Object.assign(new HarnessPrompt(), {
        promptId: p.promptId,
        question: p.question,
        header: p.header,
        options: p.options.map((o) => Object.assign(new PromptOption(), { label: o.label, description: o.description ?? null })),
        multiSelect: p.multiSelect,
        turnId: p.turnId,
        createdAt: p.createdAt,
      }),
    );
  }

  @FieldResolver(() => TranscriptConnection, { description: "Pages through the CLI's own transcript store, oldest first (default 50, at most 500)." })
  async transcript(
    @Root() s: HarnessSession,
    @Ctx() ctx: SessionsContext,
    @Arg('first', () => Int, { nullable: true }) first?: number | null,
    @Arg('after', () => String, { nullable: true }) after?: string | null,
  ): Promise<TranscriptConnection> {
    const page = parseInput(transcriptPageArgsSchema, { first, after }, 'page');
    const { entries, hasNextPage } = await ctx.services.plane.transcript(s.view as SessionView, page.first, page.after);
    const edges = entries.map((e) => ({ cursor: e.cursor, node: toEntry(e.entry) }));
    return { edges, pageInfo: { hasNextPage, endCursor: edges.at(-1)?.cursor ?? null } };
  }
}
