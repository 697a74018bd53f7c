import type { RibAction, RibActionResult } from '@keelson/ribs-contract';
import { rib, sleep, startHost } from './support/quietHost';

const seed = { systemPrompt: 'You help with boards.', name: 'Helper' };

/** A rib that records each action and replies with whatever `reply` says. */
function echoRib(reply: (action: RibAction) => RibActionResult = () => ({ ok: true })) {
  const seen: RibAction[] = [];
  const demo = rib('demo', {
    views: [
      { key: 'rib:demo', canvasKind: 'view' },
      { key: 'rib:demo:page', canvasKind: 'html' },
    ],
    onAction(action) {
      seen.push(action);
      return reply(action);
    },
  });
  return { demo, seen };
}

describe('action origin', () => {
  it('is stamped board for ribAction and canvas-html for canvasAction, whatever the payload claims', async () => {
    const { demo, seen } = echoRib();
    const { host } = await startHost([demo]);
    await host.ribAction('demo', 'refresh', { n: 1 });
    await host.canvasAction('demo', 'refresh', { origin: 'board' });
    expect(seen).toEqual([
      { type: 'refresh', payload: { n: 1 }, origin: 'board' },
      { type: 'refresh', payload: { origin: 'board' }, origin: 'canvas-html' },
    ]);
  });

  it('lets a rib keep a verb for the board: a canvas frame cannot reach it', async () => {
    const demo = rib('demo', {
      onAction: (action) =>
        action.type === 'delete-project' && action.origin !== 'board' ? { ok: false, error: 'delete-project is board-only' } : { ok: true, data: { done: action.type } },
    });
    const { host } = await startHost([demo]);
    await expect(host.canvasAction('demo', 'delete-project')).resolves.toEqual({ ok: false, error: 'delete-project is board-only' });
    await expect(host.ribAction('demo', 'delete-project')).resolves.toEqual({ ok: true, data: { done: 'delete-project' } });
  });

  it('rejects an unknown rib, a rib without onAction and a malformed verb', async () => {
    const { host } = await startHost([rib('quiet'), echoRib().demo]);
    await expect(host.ribAction('ghost', 'x')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(host.ribAction('quiet', 'x')).rejects.toMatchObject({ code: 'CAPABILITY_UNSUPPORTED' });
    await expect(host.ribAction('demo', '')).rejects.toMatchObject({ code: 'BAD_USER_INPUT', message: expect.stringMatching(/action\.type/) });
  });

  it('reads a throwing handler or a malformed result as { ok: false }', async () => {
    const { host } = await startHost([
      rib('thrower', {
        onAction: () => {
          throw new Error('kaput');
        },
      }),
      rib('liar', { onAction: () => ({ success: true }) as never }),
    ]);
    await expect(host.ribAction('thrower', 'go')).resolves.toEqual({ ok: false, error: "action 'go' failed: kaput" });
    await expect(host.ribAction('liar', 'go')).resolves.toMatchObject({ ok: false, error: expect.stringMatching(/malformed result/) });
  });
});

describe('effects', () => {
  it.each([
    { effect: 'open-chat', seed },
    { effect: 'run-workflow', workflow: 'demo-refresh', args: { id: '1' }, stay: true },
    { effect: 'open-canvas', key: 'rib:demo', title: 'Board', placement: 'side' },
    { effect: 'open-surface', surfaceId: 'surface:demo:main', regionKey: 'rib:demo' },
    { effect: 'open-run', runId: 'run-1', workflow: 'demo-refresh' },
  ])('passes a well-formed $effect from a board action', async (effect) => {
    const { host } = await startHost([echoRib(() => ({ ok: true, data: effect })).demo]);
    await expect(host.ribAction('demo', 'go')).resolves.toEqual({ ok: true, data: effect });
  });

  it('rejects an unknown effect instead of treating it as navigation', async () => {
    const { host, warnings } = await startHost([echoRib(() => ({ ok: true, data: { effect: 'open-url', url: 'https://example.com' } })).demo]);
    await expect(host.ribAction('demo', 'go')).resolves.toEqual({ ok: false, error: expect.stringMatching(/unrecognized effect "open-url"/) });
    expect(warnings).toContainEqual(expect.objectContaining({ rule: 'effect', ribId: 'demo' }));
  });

  it('rejects a malformed effect, naming the field', async () => {
    const { host } = await startHost([echoRib(() => ({ ok: true, data: { effect: 'open-run', runId: 'r' } })).demo]);
    await expect(host.ribAction('demo', 'go')).resolves.toEqual({ ok: false, error: expect.stringMatching(/malformed 'open-run' effect: data\.workflow/) });
  });

  it('passes plain data that carries no effect', async () => {
    const { host } = await startHost([echoRib(() => ({ ok: true, data: { rows: [1, 2] } })).demo]);
    await expect(host.ribAction('demo', 'go')).resolves.toEqual({ ok: true, data: { rows: [1, 2] } });
  });

  it.each([
    { effect: 'open-canvas', key: 'rib:demo' },
    { effect: 'open-chat', seed },
  ])('lets a canvas reply carry $effect', async (effect) => {
    const { host } = await startHost([echoRib(() => ({ ok: true, data: effect })).demo]);
    await expect(host.canvasAction('demo', 'go')).resolves.toEqual({ ok: true, data: effect });
  });

  it.each([
    { effect: 'run-workflow', workflow: 'demo-refresh' },
    { effect: 'open-surface', surfaceId: 'surface:demo:main' },
    { effect: 'open-run', runId: 'r', workflow: 'w' },
  ])('drops $effect from a canvas reply', async (effect) => {
    const { host, warnings } = await startHost([echoRib(() => ({ ok: true, data: effect })).demo]);
    await expect(host.canvasAction('demo', 'go')).resolves.toEqual({ ok: true });
    expect(warnings).toContainEqual(expect.objectContaining({ rule: 'canvas-effect', message: expect.stringMatching(new RegExp(`dropped '${effect.effect}'`)) }));
  });

  it('opens html, markdown and log documents centered even when side is asked for', async () => {
    const { host } = await startHost([
      echoRib((a) => ({ ok: true, data: { effect: 'open-canvas', key: a.type === 'html' ? 'rib:demo:page' : a.type === 'view' ? 'rib:demo' : 'rib:demo:unknown', placement: 'side' } })).demo,
    ]);
    await expect(host.ribAction('demo', 'html')).resolves.toMatchObject({ data: { placement: 'center' } });
    await expect(host.ribAction('demo', 'view')).resolves.toMatchObject({ data: { placement: 'side' } });
    await expect(host.ribAction('demo', 'other')).resolves.toMatchObject({ data: { placement: 'side' } });
  });
});

describe('ingest', () => {
  it('dispatches the conventional ingest action to a rib that accepts it', async () => {
    const seen: RibAction[] = [];
    const { host } = await startHost([rib('inbox', { acceptsIngest: true, onAction: (a) => (seen.push(a), { ok: true }) })]);
    await expect(host.ingest('inbox', { text: 'remember this', sourceConversationId: 'c-1' })).resolves.toEqual({ ok: true });
    expect(seen).toEqual([{ type: 'ingest', payload: { text: 'remember this', sourceConversationId: 'c-1' }, origin: 'board' }]);
  });

  it('refuses a rib that does not accept ingest, and a payload over the cap', async () => {
    const { host } = await startHost([rib('inbox', { acceptsIngest: true, onAction: () => ({ ok: true }) }), echoRib().demo]);
    await expect(host.ingest('demo', { text: 'x' })).rejects.toMatchObject({ code: 'CAPABILITY_UNSUPPORTED' });
    await expect(host.ingest('inbox', { text: 'x'.repeat(32_001) })).rejects.toMatchObject({ code: 'BAD_USER_INPUT', message: expect.stringMatching(/ingest\.text/) });
    await expect(host.ingest('inbox', { text: 'x', extra: 1 } as never)).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
  });
});

describe('agents', () => {
  const agents = rib('agents', {
    listAgents: () => [
      { slug: 'reviewer', name: 'Reviewer', description: 'Reviews diffs' },
      { slug: 'Bad Slug', name: 'Broken' },
    ],
    resolveAgent: (slug) => (slug === 'reviewer' ? { ...seed, name: 'Reviewer' } : null),
  });

  it('lists valid agents with their rib, dropping malformed ones', async () => {
    const { host, warnings } = await startHost([agents, rib('plain')]);
    await expect(host.agents()).resolves.toEqual([{ slug: 'reviewer', name: 'Reviewer', description: 'Reviews diffs', ribId: 'agents' }]);
    expect(warnings).toContainEqual(expect.objectContaining({ rule: 'agents', message: expect.stringMatching(/dropped a malformed agent/) }));
  });

  it('resolves a slug to its seed, and an unknown slug to null', async () => {
    const { host } = await startHost([agents]);
    await expect(host.resolveAgent('agents', 'reviewer')).resolves.toEqual({ ...seed, name: 'Reviewer' });
    await expect(host.resolveAgent('agents', 'nobody')).resolves.toBeNull();
  });
});

describe('commands', () => {
  const cmds = rib('cmds', {
    listCommands: () => [
      { name: 'review', description: 'Open the reviewer', argument: { hint: 'branch', completes: true } },
      { name: 'steal', description: 'Open another rib agent' },
    ],
    invokeCommand: (name, arg) =>
      name === 'review'
        ? arg
          ? { ok: true, effect: { effect: 'open-agent', ribId: 'cmds', slug: 'reviewer' } }
          : { ok: true, effect: { effect: 'message', markdown: 'Usage: `/review <branch>`' } }
        : { ok: true, effect: { effect: 'open-agent', ribId: 'agents', slug: 'x' } },
    completeCommand: (_name, prefix) => ['main', 'feature/a', 'fix/b'].filter((b) => b.startsWith(prefix)).map((value) => ({ value })),
  });

  it('lists commands with their rib', async () => {
    const { host } = await startHost([cmds]);
    await expect(host.commands()).resolves.toEqual([
      { name: 'review', description: 'Open the reviewer', argument: { hint: 'branch', completes: true }, ribId: 'cmds' },
      { name: 'steal', description: 'Open another rib agent', ribId: 'cmds' },
    ]);
  });

  it('invokes to a closed effect the surface performs', async () => {
    const { host } = await startHost([cmds]);
    await expect(host.invokeCommand('cmds', 'review', 'main')).resolves.toEqual({ ok: true, effect: { effect: 'open-agent', ribId: 'cmds', slug: 'reviewer' } });
    await expect(host.invokeCommand('cmds', 'review', '')).resolves.toMatchObject({ ok: true, effect: { effect: 'message' } });
  });

  it('refuses an unlisted command and an effect opening another rib\'s agent', async () => {
    const { host } = await startHost([cmds]);
    await expect(host.invokeCommand('cmds', 'nope', '')).resolves.toEqual({ ok: false, error: "rib 'cmds' has no command 'nope'" });
    await expect(host.invokeCommand('cmds', 'steal', '')).resolves.toMatchObject({ ok: false, error: expect.stringMatching(/only rib 'cmds''s agents/) });
  });

  it('completes with the full set for an empty prefix', async () => {
    const { host } = await startHost([cmds]);
    await expect(host.completeCommand('cmds', 'review', '')).resolves.toEqual([{ value: 'main' }, { value: 'feature/a' }, { value: 'fix/b' }]);
    await expect(host.completeCommand('cmds', 'review', 'f')).resolves.toEqual([{ value: 'feature/a' }, { value: 'fix/b' }]);
  });
});

describe('auth status', () => {
  it('appears in the manifest only for ribs that declare a probe', async () => {
    const { host } = await startHost([rib('signed', { authStatus: () => ({ authenticated: true }) }), rib('plain')]);
    const manifest = await host.manifest();
    expect(manifest.ribs.find((r) => r.id === 'signed')!.auth).toEqual({ authenticated: true });
    expect(manifest.ribs.find((r) => r.id === 'plain')).not.toHaveProperty('auth');
    await expect(host.authStatus('plain')).resolves.toBeUndefined();
  });

  it('reads a throwing probe as unauthenticated with the error as its message', async () => {
    const { host } = await startHost([
      rib('broken', {
        authStatus: async () => {
          throw new Error('gh: not logged in');
        },
      }),
    ]);
    await expect(host.authStatus('broken')).resolves.toEqual({ authenticated: false, statusMessage: 'gh: not logged in' });
    expect((await host.manifest()).ribs[0]!.auth).toEqual({ authenticated: false, statusMessage: 'gh: not logged in' });
  });

  it('reads a hanging probe as unauthenticated after the probe timeout', async () => {
    const { host } = await startHost([rib('slow', { authStatus: () => sleep(1_000).then(() => ({ authenticated: true })) })], { authProbeTimeoutMs: 20 });
    await expect(host.authStatus('slow')).resolves.toEqual({ authenticated: false, statusMessage: 'auth probe timed out after 20ms' });
  });
});
