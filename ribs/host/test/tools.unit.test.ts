import type { MessageChunk, ToolDefinition } from '@keelson/ribs-contract';
import { z } from 'zod';
import { BUILTIN_CODING_TOOLS } from '../src/builtins/codingTools';
import { rib, sleep, startHost } from './support/quietHost';

const tool = (name: string, execute: ToolDefinition['execute'], extra: Partial<ToolDefinition> = {}): ToolDefinition => ({
  name,
  description: `${name} tool`,
  inputSchema: z.object({ text: z.string().optional() }),
  execute,
  ...extra,
});

describe('the shared tool registry', () => {
  it('lists every tool with its family and owner, the host\'s keelson_docs and coding tools first', async () => {
    const { host } = await startHost([
      rib('demo', { registerTools: () => [tool('demo_ping', () => undefined, { state_changing: true }), tool('ping', () => undefined)] }),
    ]);
    expect(host.tools()).toEqual([
      expect.objectContaining({ name: 'keelson_docs', family: 'keelson' }),
      ...BUILTIN_CODING_TOOLS.map((name) => expect.objectContaining({ name, family: 'other' })),
      { name: 'demo_ping', description: 'demo_ping tool', family: 'demo', ownerRibId: 'demo', state_changing: true, requires_confirmation: false },
      { name: 'ping', description: 'ping tool', family: 'other', ownerRibId: 'demo', state_changing: false, requires_confirmation: false },
    ]);
    expect(host.tools()[0]).not.toHaveProperty('ownerRibId');
    expect((await host.ribSummary('demo'))!.tools.map((t) => t.name)).toEqual(['demo_ping', 'ping']);
  });

  it('skips a malformed tool or one claiming the host\'s name, with a warning, keeping the rib\'s other tools', async () => {
    const { host, warnings } = await startHost([
      rib('demo', {
        registerTools: () => [tool('keelson_docs', () => undefined), { name: 'bad name!', description: 'x' } as never, tool('Bash', () => undefined), tool('demo_ok', () => undefined)],
      }),
    ]);
    expect(host.tools().map((t) => t.name)).toEqual(['keelson_docs', ...BUILTIN_CODING_TOOLS, 'demo_ok']);
    expect(warnings.map((w) => w.rule)).toEqual(['tool-collision', 'tool-shape', 'tool-collision']);
  });
});

describe('tool execution', () => {
  it('collects the tool_result chunks a tool emits, in order', async () => {
    const chunks: MessageChunk[] = [];
    const { host } = await startHost([
      rib('demo', {
        registerTools: () => [
          tool('demo_two', async (input, ctx) => {
            ctx.emit({ type: 'tool_result', toolUseId: '', content: 'first' });
            await sleep(1);
            ctx.emit({ type: 'tool_result', toolUseId: '', content: `second ${(input as { text: string }).text}` });
          }),
        ],
      }),
    ]);
    const outcome = await host.executeTool({ name: 'demo_two', input: { text: 'x' }, surface: 'chat', toolUseId: 'tu-1', onChunk: (c) => chunks.push(c) });
    expect(outcome).toEqual({
      status: 'ok',
      isError: false,
      content: 'first\nsecond x',
      chunks: [
        { type: 'tool_result', toolUseId: 'tu-1', content: 'first' },
        { type: 'tool_result', toolUseId: 'tu-1', content: 'second x' },
      ],
    });
    expect(chunks).toEqual(outcome.chunks);
  });

  it('reads an emitted isError as a tool error, and a throw as one too', async () => {
    const { host } = await startHost([
      rib('demo', {
        registerTools: () => [
          tool('demo_err', (_i, ctx) => ctx.emit({ type: 'tool_result', toolUseId: '', content: 'no such branch', isError: true })),
          tool('demo_throw', () => {
            throw new Error('oops');
          }),
        ],
      }),
    ]);
    await expect(host.executeTool({ name: 'demo_err', input: {}, surface: 'chat' })).resolves.toMatchObject({ status: 'tool-error', isError: true, content: 'no such branch' });
    await expect(host.executeTool({ name: 'demo_throw', input: {}, surface: 'chat' })).resolves.toMatchObject({ status: 'tool-error', content: "tool 'demo_throw' failed: oops" });
  });

  it('parses the input with the tool\'s schema before execute runs', async () => {
    const execute = jest.fn();
    const { host } = await startHost([rib('demo', { registerTools: () => [tool('demo_x', execute)] })]);
    await expect(host.executeTool({ name: 'demo_x', input: { text: 5 }, surface: 'chat' })).resolves.toMatchObject({ status: 'invalid-input', content: expect.stringMatching(/input\.text/) });
    await expect(host.executeTool({ name: 'nope', input: {}, surface: 'chat' })).resolves.toMatchObject({ status: 'unknown-tool' });
    expect(execute).not.toHaveBeenCalled();
  });

  it('aborts the tool\'s signal on cancellation and drops what it emits afterwards', async () => {
    const controller = new AbortController();
    let sawAbort = false;
    const { host } = await startHost([
      rib('demo', {
        registerTools: () => [
          tool('demo_wait', async (_i, ctx) => {
            await new Promise((resolve) => ctx.abortSignal.addEventListener('abort', resolve));
            sawAbort = ctx.abortSignal.aborted;
            ctx.emit({ type: 'tool_result', toolUseId: '', content: 'too late' });
          }),
        ],
      }),
    ]);
    const run = host.executeTool({ name: 'demo_wait', input: {}, surface: 'chat', signal: controller.signal });
    await sleep(5);
    controller.abort();
    await expect(run).resolves.toEqual({ status: 'cancelled', isError: true, content: "tool 'demo_wait' was cancelled", chunks: [] });
    expect(sawAbort).toBe(true);
  });

  it('cancels running tools when the host is disposed', async () => {
    const { host } = await startHost([rib('demo', { registerTools: () => [tool('demo_wait', (_i, ctx) => new Promise((r) => ctx.abortSignal.addEventListener('abort', () => r())))] })]);
    const run = host.executeTool({ name: 'demo_wait', input: {}, surface: 'chat' });
    await host.dispose();
    await expect(run).resolves.toMatchObject({ status: 'cancelled', content: 'the host is shutting down' });
  });
});

describe('policies around tool calls', () => {
  const secretTool = tool('demo_secret', (_i, ctx) => ctx.emit({ type: 'tool_result', toolUseId: '', content: 'token=abc123 rest' }));

  it('denies a call before execute runs, naming the policy and its reason', async () => {
    const execute = jest.fn();
    const { host } = await startHost([
      rib('demo', {
        registerTools: () => [tool('demo_rm', execute)],
        contributePolicies: () => [{ id: 'no-rm', on: [{ phase: 'tool_call', tool: 'demo_rm' }], evaluate: () => ({ outcome: 'deny', reason: 'rm is off' }) }],
      }),
    ]);
    await expect(host.executeTool({ name: 'demo_rm', input: {}, surface: 'chat' })).resolves.toMatchObject({
      status: 'policy-denied',
      policyId: 'demo:no-rm',
      content: 'denied by demo:no-rm: rm is off',
    });
    expect(execute).not.toHaveBeenCalled();
  });

  it('redacts a result when a tool_result policy allows with substitute text', async () => {
    const { host } = await startHost([
      rib('demo', {
        registerTools: () => [secretTool],
        contributePolicies: () => [
          {
            id: 'redact',
            on: [{ phase: 'tool_result' }],
            evaluate: (e) => (e.phase === 'tool_result' ? { outcome: 'allow', data: String(e.result).replace(/token=\S+/, 'token=[redacted]') } : { outcome: 'allow' }),
          },
        ],
      }),
    ]);
    await expect(host.executeTool({ name: 'demo_secret', input: {}, surface: 'chat' })).resolves.toMatchObject({ status: 'ok', content: 'token=[redacted] rest' });
  });

  it('withholds a result a tool_result policy denies', async () => {
    const { host } = await startHost([
      rib('demo', { registerTools: () => [secretTool], contributePolicies: () => [{ id: 'dlp', on: [{ phase: 'tool_result' }], evaluate: () => ({ outcome: 'deny', reason: 'contains a token' }) }] }),
    ]);
    await expect(host.executeTool({ name: 'demo_secret', input: {}, surface: 'chat' })).resolves.toMatchObject({
      status: 'tool-error',
      content: 'result withheld by demo:dlp: contains a token',
    });
  });

  it('enforces builtin:path_confinement for turns with allowed directories', async () => {
    const execute = jest.fn();
    const { host, home } = await startHost([rib('demo', { registerTools: () => [{ ...tool('fs_read', execute), inputSchema: z.object({ path: z.string() }) }] })]);
    await expect(host.executeTool({ name: 'fs_read', input: { path: '/etc/passwd' }, surface: 'rib', allowedDirectories: [home] })).resolves.toMatchObject({
      status: 'policy-denied',
      policyId: 'builtin:path_confinement',
    });
    await expect(host.executeTool({ name: 'fs_read', input: { path: 'notes.md' }, surface: 'rib', cwd: home, allowedDirectories: [home] })).resolves.toMatchObject({ status: 'ok' });
    await expect(host.executeTool({ name: 'fs_read', input: { path: '/etc/passwd' }, surface: 'rib' })).resolves.toMatchObject({ status: 'ok' });
  });
});
