import { mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRibHost, type RibHost } from '@keelson/host';
import { staticConfigPort } from '@keelson/host-doubles';
import { startModelServer, type ModelServer } from '@keelson/model-server';
import { silentLogger } from '@keelson/service';
import type { MessageChunk, Rib, RibAgentTurn, RibAgentTurnRequest, ToolDefinition } from '@keelson/ribs-contract';
import { z } from 'zod';
import { createAgentTurns, NEUTRAL_CWD_DIR, type AgentTurns } from './agentTurns';
import { InMemoryUsageLedger } from './ledger/usageLedger';
import { InMemorySessionStore } from './sessions/sessionStore';

// Every turn here is a real HTTP provider against the local model server (Anthropic Messages and
// Chat Completions, streamed), with tools executed by a real rib host.

const reply = (ctx: Parameters<ToolDefinition['execute']>[1], content: string, isError = false) =>
  ctx.emit({ type: 'tool_result', toolUseId: '', content, ...(isError ? { isError } : {}) });

const alphaRead: ToolDefinition<{ path: string }> = {
  name: 'alpha_read',
  description: 'Read a text file.',
  inputSchema: z.strictObject({ path: z.string() }),
  execute: (input, ctx) => reply(ctx, readFileSync(join(ctx.cwd, input.path), 'utf8').trim()),
};
const alphaWhere: ToolDefinition<Record<string, never>> = {
  name: 'alpha_where',
  description: 'Where the turn runs, and its turn context.',
  inputSchema: z.strictObject({}),
  execute: (_input, ctx) => reply(ctx, JSON.stringify({ cwd: ctx.cwd, caller: ctx.callerRibId, turnContext: ctx.turnContext ?? null })),
};
const betaPing: ToolDefinition<Record<string, never>> = {
  name: 'beta_ping',
  description: 'Answers pong.',
  inputSchema: z.strictObject({}),
  execute: (_input, ctx) => reply(ctx, 'pong from beta'),
};

const alpha: Rib = { id: 'alpha', displayName: 'Alpha', registerTools: () => [alphaRead, alphaWhere] as ToolDefinition[] };
const beta: Rib = { id: 'beta', displayName: 'Beta', registerTools: () => [betaPing] as ToolDefinition[] };

interface Harness {
  host: RibHost;
  turns: AgentTurns;
  ledger: InMemoryUsageLedger;
  home: string;
}

async function boot(server: ModelServer, env: Record<string, string> = {}, config: Record<string, unknown> = {}): Promise<Harness> {
  const home = mkdtempSync(join(tmpdir(), 'keelson-turns-'));
  const fullEnv = { KEELSON_ANTHROPIC_BASE_URL: server.anthropicBaseUrl, KEELSON_OPENAI_BASE_URL: server.openaiBaseUrl, ANTHROPIC_API_KEY: 'test-key', ...env };
  const ledger = new InMemoryUsageLedger();
  const ref: { host?: RibHost } = {};
  const turns = createAgentTurns({ home, env: fullEnv, config, ledger, sessions: new InMemorySessionStore(), host: () => ref.host, log: silentLogger() });
  const host = (ref.host = await createRibHost({
    available: { alpha, beta },
    env: fullEnv,
    home,
    logger: silentLogger(),
    config: staticConfigPort(config),
    seams: turns.seams,
  }));
  return { host, turns, ledger, home };
}

async function drain(turn: RibAgentTurn): Promise<MessageChunk[]> {
  const chunks: MessageChunk[] = [];
  for await (const chunk of turn.stream) chunks.push(chunk);
  return chunks;
}

describe('agent turns over the wire', () => {
  let server: ModelServer;
  let h: Harness;
  /** A turn of rib alpha, through its context's seam. */
  const run = (req: RibAgentTurnRequest) => h.host.context('alpha')!.runAgentTurn!(req);

  beforeAll(async () => {
    server = await startModelServer();
    h = await boot(server);
  });
  afterAll(async () => {
    await h.host.dispose();
    rmSync(h.home, { recursive: true, force: true });
    await server.stop();
  });
  beforeEach(() => server.clear());

  describe.each([
    ['anthropic', 'anthropic', '/v1/messages'],
    ['openai', 'chat', '/v1/chat/completions'],
  ] as const)('the %s provider', (provider, api, path) => {
    it('streams a text answer: the result is the truth, the stream ends with its text tail and done', async () => {
      const turn = run({ prompt: 'hello there', provider });
      const [chunks, result] = await Promise.all([drain(turn), turn.result]);
      expect(result).toMatchObject({ status: 'ok', text: 'ECHO hello there', stopReason: 'end', providerId: provider });
      expect(result.usage!.inputTokens).toBeGreaterThan(0);
      expect(result.usage!.outputTokens).toBeGreaterThan(0);
      expect(chunks).toEqual([{ type: 'text', text: 'ECHO hello there' }, { type: 'done', stopReason: 'end' }]);
      const [sent] = server.requests();
      expect(sent).toMatchObject({ api, path, status: 200 });
      expect((sent!.body as { stream: boolean }).stream).toBe(true);
      // Text-only by default: no tool list reaches the model.
      expect((sent!.body as { tools?: unknown }).tools).toBeUndefined();
    });

    it('runs the tool loop through the rib host and hands the model the tool result', async () => {
      writeFileSync(join(h.home, 'note.txt'), 'the answer is 42\n');
      const turn = run({ prompt: 'CALL_TOOL alpha_read {"path":"note.txt"}', provider, tools: ['alpha_read'], cwd: h.home });
      const [chunks, result] = await Promise.all([drain(turn), turn.result]);
      expect(result).toMatchObject({ status: 'ok', stopReason: 'end', text: 'DONE alpha_read: the answer is 42' });
      expect(chunks.map((c) => c.type)).toEqual(['tool_use', 'tool_result', 'text', 'done']);
      expect(chunks[0]).toMatchObject({ type: 'tool_use', name: 'alpha_read', input: { path: 'note.txt' } });
      expect(chunks[1]).toMatchObject({ type: 'tool_result', content: 'the answer is 42' });
      expect((chunks[0] as { toolUseId: string }).toolUseId).toBe((chunks[1] as { toolUseId: string }).toolUseId);
      const [first, second] = server.requests();
      expect((first!.body as { tools: { name?: string; function?: { name: string } }[] }).tools.map((t) => t.name ?? t.function?.name)).toEqual(['alpha_read']);
      expect(second).toMatchObject({ toolRounds: 1 });
      expect(JSON.stringify(second!.body)).toContain('the answer is 42');
    });

    it('stops at max_tokens and says so', async () => {
      const small = await boot(server, { KEELSON_AGENT_MAX_TOKENS: '3' });
      try {
        const turn = small.turns.run({ prompt: 'a rather long prompt that the model echoes back in full', provider, surface: 'rib' });
        const result = await turn.result;
        expect(result).toMatchObject({ status: 'ok', stopReason: 'max_tokens', text: 'ECHO a rathe' });
      } finally {
        await small.host.dispose();
      }
    });

    it('fails on an HTTP error with stopReason error, and the stream carries the error before done', async () => {
      const turn = run({ prompt: 'FAIL_HTTP 503 overloaded today', provider });
      const [chunks, result] = await Promise.all([drain(turn), turn.result]);
      expect(result).toMatchObject({ status: 'error', stopReason: 'error', providerId: provider });
      expect(result.error).toBe(`provider ${provider} answered HTTP 503: overloaded today`);
      expect(chunks).toEqual([
        { type: 'error', message: result.error },
        { type: 'done', stopReason: 'error' },
      ]);
    });

    it('aborts mid-stream on the caller signal, and times out on timeoutMs', async () => {
      const controller = new AbortController();
      const aborted = run({ prompt: 'SLOW 5000 a slow answer that takes a while to arrive', provider, abortSignal: controller.signal });
      setTimeout(() => controller.abort(), 150);
      const startedAt = Date.now();
      await expect(aborted.result).resolves.toMatchObject({ status: 'aborted', stopReason: 'aborted' });
      const timedOut = await run({ prompt: 'SLOW 5000 a slow answer that takes a while to arrive', provider, timeoutMs: 200 }).result;
      expect(timedOut).toMatchObject({ status: 'timeout', stopReason: 'timeout', error: 'the turn timed out after 200 ms' });
      expect(Date.now() - startedAt).toBeLessThan(2000);
    });
  });

  it('resolves the model: explicit model, then the config file\'s class, then the provider\'s class, then its default', async () => {
    const configured = await boot(server, { KEELSON_DEFAULT_PROVIDER: 'openai' }, { modelClasses: { openai: { deep: 'ops-deep' } } });
    try {
      const modelOf = async (req: Partial<RibAgentTurnRequest>) => {
        server.clear();
        const result = await configured.turns.run({ prompt: 'hi', surface: 'rib', ...req }).result;
        expect(result.status).toBe('ok');
        return [(server.requests()[0]!.body as { model: string }).model, result.model];
      };
      expect(await modelOf({ modelClass: 'deep', model: 'pinned' })).toEqual(['pinned', 'pinned']);
      expect(await modelOf({ modelClass: 'deep' })).toEqual(['ops-deep', 'ops-deep']);
      expect(await modelOf({ modelClass: 'fast' })).toEqual(['gpt-5-mini', 'gpt-5-mini']);
      expect(await modelOf({})).toEqual(['gpt-5', 'gpt-5']);
      expect(await modelOf({ provider: 'anthropic', modelClass: 'fast' })).toEqual(['claude-haiku-4-5', 'claude-haiku-4-5']);
      expect(configured.turns.registry.info()).toEqual([
        { id: 'anthropic', displayName: 'Anthropic', defaultModel: 'claude-sonnet-4-5', modelClasses: { fast: 'claude-haiku-4-5', balanced: 'claude-sonnet-4-5', deep: 'claude-opus-4-1' } },
        { id: 'openai', displayName: 'OpenAI-compatible', defaultModel: 'gpt-5', modelClasses: { fast: 'gpt-5-mini', balanced: 'gpt-5', deep: 'ops-deep' } },
      ]);
      expect(configured.host.context('alpha')!.getProviders!().map((p) => p.id)).toEqual(['anthropic', 'openai']);
    } finally {
      await configured.host.dispose();
    }
  });

  it('sends reasoningEffort only to a provider that supports it, dropping it silently elsewhere', async () => {
    const [anthropic, openai] = await Promise.all([
      run({ prompt: 'think first', provider: 'anthropic', reasoningEffort: 'low' }).result,
      run({ prompt: 'think first', provider: 'openai', reasoningEffort: 'high' }).result,
    ]);
    expect(anthropic).toMatchObject({ status: 'ok', text: 'ECHO think first' });
    expect(openai).toMatchObject({ status: 'ok', text: 'ECHO think first' });
    const bodyOf = (api: string) => server.requests().find((r) => r.api === api)!.body as Record<string, unknown>;
    expect(bodyOf('anthropic').thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
    expect(bodyOf('chat')).not.toHaveProperty('reasoning_effort');
  });

  it('runs a turn without cwd in the neutral directory, forwarding turnContext verbatim to tools', async () => {
    const turnContext = { ticket: 'K-7' };
    const result = await run({ prompt: 'CALL_TOOL alpha_where {}', tools: ['alpha_where'], turnContext }).result;
    const seen = JSON.parse(result.text.replace(/^DONE alpha_where: /, ''));
    expect(seen).toEqual({ cwd: join(h.home, NEUTRAL_CWD_DIR), caller: 'alpha', turnContext });
    expect(seen.cwd).not.toBe(process.cwd());
  });

  it('confines path arguments to allowedDirectories, through symlinks too', async () => {
    const root = join(h.home, 'confined');
    const outside = join(h.home, 'outside');
    mkdirSync(root, { recursive: true });
    mkdirSync(outside, { recursive: true });
    writeFileSync(join(root, 'inside.txt'), 'inside\n');
    writeFileSync(join(outside, 'secret.txt'), 'secret\n');
    symlinkSync(outside, join(root, 'escape'));
    const read = (path: string) => run({ prompt: `CALL_TOOL alpha_read {"path":"${path}"}`, tools: ['alpha_read'], cwd: root, allowedDirectories: [root] });

    await expect(read('inside.txt').result).resolves.toMatchObject({ text: 'DONE alpha_read: inside' });
    const escaped = read('escape/secret.txt');
    const [chunks, result] = await Promise.all([drain(escaped), escaped.result]);
    expect(chunks[1]).toMatchObject({ type: 'tool_result', isError: true });
    expect((chunks[1] as { content: string }).content).toBe("denied by builtin:path_confinement: path 'escape/secret.txt' resolves outside the turn's allowed directories");
    expect(result.text).toBe(`DONE alpha_read: ${(chunks[1] as { content: string }).content}`);
    // Unconfined (no allowedDirectories), the same read goes through.
    await expect(run({ prompt: 'CALL_TOOL alpha_read {"path":"escape/secret.txt"}', tools: ['alpha_read'], cwd: root }).result).resolves.toMatchObject({
      text: 'DONE alpha_read: secret',
    });
  });

  it('offers the built-in coding tools a rib turn names, confined to its allowedDirectories, never as ambient tools', async () => {
    const root = join(h.home, 'coding');
    mkdirSync(root, { recursive: true });
    const written = run({ prompt: 'WRITE_FILE src/out.txt written by a rib turn', allowedTools: ['Write', 'Bash'], cwd: root, allowedDirectories: [root], provider: 'openai' });
    const [chunks, result] = await Promise.all([drain(written), written.result]);
    expect(result).toMatchObject({ status: 'ok', text: 'DONE src/out.txt' });
    expect(chunks.slice(0, 2)).toMatchObject([
      { type: 'tool_use', name: 'Write', input: { path: 'src/out.txt', content: 'written by a rib turn\n' } },
      { type: 'tool_result', content: 'Created src/out.txt (22 bytes)' },
    ]);
    expect(readFileSync(join(root, 'src', 'out.txt'), 'utf8')).toBe('written by a rib turn\n');

    const outside = join(h.home, 'config-elsewhere.txt');
    const bash = await run({ prompt: `CALL_TOOL Bash {"command":"cat ${outside}"}`, allowedTools: ['Bash'], cwd: root, allowedDirectories: [root] }).result;
    expect(bash.text).toBe(`DONE Bash: denied by builtin:path_confinement: path '${outside}' resolves outside the turn's allowed directories`);

    // Only disallowedTools: the ambient set is the rib's own tools and the host's, without the built-ins.
    server.clear();
    await run({ prompt: 'which tools?', disallowedTools: ['alpha_where'] }).result;
    expect((server.requests()[0]!.body as { tools: { name: string }[] }).tools.map((t) => t.name)).toEqual(['keelson_docs', 'alpha_read']);
  });

  it("offers a sibling rib's tool only with a cross-rib grant", async () => {
    const denied = await run({ prompt: 'CALL_TOOL beta_ping {}', tools: ['beta_ping', 'alpha_where'] }).result;
    expect((server.requests()[0]!.body as { tools: { name: string }[] }).tools.map((t) => t.name)).toEqual(['alpha_where']);
    expect(denied.text).toMatch(/^CALL_TOOL: no tool named beta_ping among: alpha_where/);

    const granted = await boot(server, { KEELSON_CROSS_RIB_GRANTS: 'alpha:beta:beta_ping' });
    try {
      const result = await granted.host.context('alpha')!.runAgentTurn!({ prompt: 'CALL_TOOL beta_ping {}', tools: ['beta_ping'] }).result;
      expect(result).toMatchObject({ status: 'ok', text: 'DONE beta_ping: pong from beta' });
    } finally {
      await granted.host.dispose();
    }
  });

  it('continues a session by its id, for the rib that owns it only', async () => {
    const first = await run({ prompt: 'remember the word kumquat' }).result;
    expect(first.sessionId).toMatch(/^anthropic:[0-9a-f-]{36}$/);
    server.clear();
    const second = await run({ prompt: 'what was the word', resumeSessionId: first.sessionId }).result;
    expect(second).toMatchObject({ status: 'ok', sessionId: first.sessionId, text: 'ECHO what was the word' });
    expect(JSON.stringify(server.requests()[0]!.body)).toContain('remember the word kumquat');
    const foreign = await h.host.context('beta')!.runAgentTurn!({ prompt: 'hi', resumeSessionId: first.sessionId }).result;
    expect(foreign).toMatchObject({ status: 'error', stopReason: 'error' });
    expect(foreign.error).toBe(`resumeSessionId ${JSON.stringify(first.sessionId)} names no session of this rib (beta)`);
  });

  it('writes one ledger row per billed turn under the owning rib, and none for a turn that never reached a model', async () => {
    const before = h.ledger.rows.length;
    const result = await run({ prompt: 'CALL_TOOL alpha_where {}', tools: ['alpha_where'], provider: 'openai' }).result;
    await run({ prompt: 'FAIL_HTTP 500' }).result;
    await run({ prompt: '' }).result;
    const rows = h.ledger.rows.slice(before);
    expect(rows).toEqual([
      expect.objectContaining({
        ribId: 'alpha',
        surface: 'rib',
        providerId: 'openai',
        model: 'gpt-5',
        status: 'ok',
        stopReason: 'end',
        rounds: 2,
        toolCalls: 1,
        inputTokens: result.usage!.inputTokens,
        outputTokens: result.usage!.outputTokens,
      }),
    ]);
  });
});
