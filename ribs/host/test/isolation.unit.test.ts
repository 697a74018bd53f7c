import type { ToolDefinition } from '@keelson/ribs-contract';
import { z } from 'zod';
import { staticConfigPort } from '@keelson/host-doubles';
import { rib, sleep, startHost } from './support/quietHost';

// One rib cannot reach another rib's keys, secrets or tools through host APIs, unless the operator
// grants it (tools only).

const echo: ToolDefinition<{ text: string }> = {
  name: 'vault_echo',
  description: 'Echo text back',
  inputSchema: z.object({ text: z.string() }),
  execute(input, ctx) {
    ctx.emit({ type: 'tool_result', toolUseId: '', content: `echo: ${input.text}` });
  },
};

/** A tool that waits until aborted, recording what it saw. */
function slowTool(seen: { aborted?: boolean }): ToolDefinition {
  return {
    name: 'vault_slow',
    description: 'Waits for its abort signal',
    inputSchema: z.object({}),
    execute: (_input, ctx) =>
      new Promise<void>((resolve) => {
        ctx.abortSignal.addEventListener('abort', () => {
          seen.aborted = true;
          resolve();
        });
      }),
  };
}

const vault = (tools: ToolDefinition[] = [echo as ToolDefinition]) => rib('vault', { registerTools: () => tools, composeBundle: async () => ({ secret: 'v' }) });

describe('snapshot namespace isolation', () => {
  it('refuses to register, publish or read another rib\'s keys, and reads its own', async () => {
    const { host } = await startHost([vault(), rib('spy')]);
    await host.recomposeSnapshot('rib:vault');
    const spy = host.context('spy')!.getSnapshotManager!();

    expect(() => spy.register('rib:vault:copy', () => 1)).toThrow(/outside rib 'spy''s namespace/);
    expect(() => spy.register('vault', () => 1)).toThrow(/outside/);
    await expect(spy.publish('rib:vault', { forged: true })).rejects.toThrow(/cannot publish/);
    await expect(spy.read('rib:vault')).resolves.toBeUndefined();
    await expect(spy.recompose('rib:vault')).resolves.toBeUndefined();
    await expect(host.readSnapshot('rib:vault')).resolves.toMatchObject({ version: 1, payload: { secret: 'v' } });

    spy.register('rib:spy:notes', () => ['mine']);
    await expect(spy.recompose('rib:spy:notes')).resolves.toMatchObject({ key: 'rib:spy:notes', version: 1, payload: ['mine'] });
    await expect(spy.read('rib:spy:notes')).resolves.toMatchObject({ payload: ['mine'] });
    expect(spy.keys()).toEqual(['rib:spy:notes']);
  });
});

describe('credential isolation', () => {
  it('reads only the rib\'s own secrets, under rib_<id>_<serviceId>', async () => {
    const { host, credentials } = await startHost([vault(), rib('spy')]);
    credentials.set('rib_vault_github', 'vault-token');
    credentials.set('rib_spy_github', 'spy-token');

    await expect(host.context('vault')!.getCredential!('github')).resolves.toBe('vault-token');
    await expect(host.context('spy')!.getCredential!('github')).resolves.toBe('spy-token');
    await expect(host.context('spy')!.getCredential!('vault_github')).resolves.toBeUndefined();
    expect(credentials.reads).toEqual(['rib_vault_github', 'rib_spy_github', 'rib_spy_vault_github']);
  });

  it('rejects a serviceId that could escape the account format', async () => {
    const { host, credentials } = await startHost([rib('spy')]);
    for (const bad of ['', '../vault', 'a b', '_github']) {
      await expect(host.context('spy')!.getCredential!(bad)).rejects.toThrow(/serviceId/);
    }
    expect(credentials.reads).toEqual([]);
  });

  it('leaves getCredential off the context when no credential store is wired', async () => {
    const { host } = await startHost([rib('spy')], { credentials: undefined });
    expect(host.context('spy')!.getCredential).toBeUndefined();
  });
});

describe('cross-rib tool grants', () => {
  it('denies an ungranted call by default, without throwing', async () => {
    const { host } = await startHost([vault(), rib('spy')]);
    await expect(host.context('spy')!.callTool!('vault', 'vault_echo', { text: 'hi' })).resolves.toEqual({
      ok: false,
      reason: 'not-granted',
      error: expect.stringMatching(/no grant for spy:vault:vault_echo/),
    });
  });

  it('lets a config grant (crossRibGrants) through', async () => {
    const { host } = await startHost([vault(), rib('spy')], { config: staticConfigPort({ crossRibGrants: { spy: { vault: ['vault_echo'] } } }) });
    await expect(host.context('spy')!.callTool!('vault', 'vault_echo', { text: 'hi' })).resolves.toMatchObject({ ok: true, content: 'echo: hi' });
  });

  it('lets an env grant (KEELSON_CROSS_RIB_GRANTS) through, including the target\'s *', async () => {
    const { host } = await startHost([vault(), rib('spy'), rib('other')], { env: { KEELSON_CROSS_RIB_GRANTS: 'spy:vault:*; other:vault:vault_nothing' } });
    await expect(host.context('spy')!.callTool!('vault', 'vault_echo', { text: 'x' })).resolves.toMatchObject({ ok: true });
    await expect(host.context('other')!.callTool!('vault', 'vault_echo', { text: 'x' })).resolves.toMatchObject({ ok: false, reason: 'not-granted' });
  });

  it('unions config and env grants, and reports the union in the manifest', async () => {
    const { host } = await startHost([vault([echo as ToolDefinition, { ...(echo as ToolDefinition), name: 'vault_other' }]), rib('spy')], {
      env: { KEELSON_CROSS_RIB_GRANTS: 'spy:vault:vault_other' },
      config: staticConfigPort({ crossRibGrants: { spy: { vault: ['vault_echo'] } } }),
    });
    const spy = host.context('spy')!;
    await expect(spy.callTool!('vault', 'vault_echo', { text: 'a' })).resolves.toMatchObject({ ok: true });
    await expect(spy.callTool!('vault', 'vault_other', { text: 'b' })).resolves.toMatchObject({ ok: true });
    expect((await host.manifest()).crossRibGrants).toEqual({ spy: { vault: ['vault_echo', 'vault_other'] } });
  });

  it('reports an empty grant map as {} (reported, none), never as absent', async () => {
    const { host } = await startHost([vault()]);
    expect((await host.manifest()).crossRibGrants).toEqual({});
  });

  it('does not let a grant for one target reach a tool another rib owns', async () => {
    const { host } = await startHost([vault(), rib('spy'), rib('decoy')], { env: { KEELSON_CROSS_RIB_GRANTS: 'spy:decoy:*' } });
    await expect(host.context('spy')!.callTool!('decoy', 'vault_echo', { text: 'x' })).resolves.toMatchObject({ ok: false, reason: 'not-owned' });
  });

  it('resolves unknown ribs, unknown tools and invalid input as { ok: false }', async () => {
    const { host } = await startHost([vault(), rib('spy')], { env: { KEELSON_CROSS_RIB_GRANTS: 'spy:vault:*' } });
    const spy = host.context('spy')!;
    await expect(spy.callTool!('ghost', 'vault_echo', {})).resolves.toMatchObject({ ok: false, reason: 'unknown-rib' });
    await expect(spy.callTool!('vault', 'vault_nope', {})).resolves.toMatchObject({ ok: false, reason: 'unknown-tool' });
    await expect(spy.callTool!('vault', 'vault_echo', { text: 3 })).resolves.toMatchObject({ ok: false, reason: 'invalid-input', error: expect.stringMatching(/input\.text/) });
  });

  it('lets a rib call its own tool without a grant', async () => {
    const { host } = await startHost([vault()]);
    await expect(host.context('vault')!.callTool!('vault', 'vault_echo', { text: 'me' })).resolves.toMatchObject({ ok: true, content: 'echo: me' });
  });

  it('bounds a call by KEELSON_CROSS_RIB_CALL_TIMEOUT_MS and aborts the tool', async () => {
    const seen: { aborted?: boolean } = {};
    const { host } = await startHost([vault([slowTool(seen)]), rib('spy')], {
      env: { KEELSON_CROSS_RIB_GRANTS: 'spy:vault:*', KEELSON_CROSS_RIB_CALL_TIMEOUT_MS: '50' },
    });
    const started = Date.now();
    await expect(host.context('spy')!.callTool!('vault', 'vault_slow', {})).resolves.toMatchObject({ ok: false, reason: 'timeout', error: expect.stringMatching(/50ms/) });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(seen.aborted).toBe(true);
  });

  it('lets opts.timeoutMs override the default for one call', async () => {
    const { host } = await startHost([vault([slowTool({})]), rib('spy')], { env: { KEELSON_CROSS_RIB_GRANTS: 'spy:vault:*' } });
    await expect(host.context('spy')!.callTool!('vault', 'vault_slow', {}, { timeoutMs: 20 })).resolves.toMatchObject({ reason: 'timeout', error: expect.stringMatching(/20ms/) });
  });

  it('forwards caller cancellation to the tool', async () => {
    const seen: { aborted?: boolean } = {};
    const { host } = await startHost([vault([slowTool(seen)]), rib('spy')], { env: { KEELSON_CROSS_RIB_GRANTS: 'spy:vault:*' } });
    const controller = new AbortController();
    const call = host.context('spy')!.callTool!('vault', 'vault_slow', {}, { signal: controller.signal });
    await sleep(10);
    controller.abort();
    await expect(call).resolves.toMatchObject({ ok: false, reason: 'cancelled' });
    expect(seen.aborted).toBe(true);
  });

  it('runs the policy engine on a granted call', async () => {
    const { host } = await startHost(
      [
        vault(),
        rib('spy'),
        rib('guard', { contributePolicies: () => [{ id: 'no-echo', on: [{ phase: 'tool_call', tool: 'vault_echo' }], evaluate: (_e, ctx) => (ctx.ribId === 'spy' ? { outcome: 'deny', reason: 'spy may not echo' } : { outcome: 'allow' }) }] }),
      ],
      { env: { KEELSON_CROSS_RIB_GRANTS: 'spy:vault:*' } },
    );
    await expect(host.context('spy')!.callTool!('vault', 'vault_echo', { text: 'x' })).resolves.toMatchObject({
      ok: false,
      reason: 'policy-denied',
      error: expect.stringMatching(/guard:no-echo: spy may not echo/),
    });
  });
});

describe('tool reachability', () => {
  const setup = (env: Record<string, string> = {}, denylist: string[] = []) =>
    startHost([vault([echo as ToolDefinition, { ...(echo as ToolDefinition), name: 'vault_banned' }]), rib('spy', { registerTools: () => [{ ...(echo as ToolDefinition), name: 'spy_own' }, { ...(echo as ToolDefinition), name: 'spy_banned' }] })], {
      env,
      config: staticConfigPort({ toolDenylist: denylist }),
    });

  it('answers the floor per name, with the owner', async () => {
    const { host } = await setup({}, ['spy_banned']);
    expect(host.context('spy')!.getToolReachability!(['spy_own', 'NotebookEdit', 'Read', 'vault_echo', 'spy_banned', 'keelson_docs'])).toEqual([
      { name: 'spy_own', status: 'reachable', ownerRibId: 'spy' },
      { name: 'NotebookEdit', status: 'unregistered' },
      { name: 'Read', status: 'reachable' },
      { name: 'vault_echo', status: 'cross-rib-denied', ownerRibId: 'vault' },
      { name: 'spy_banned', status: 'denylisted', ownerRibId: 'spy' },
      { name: 'keelson_docs', status: 'reachable' },
    ]);
  });

  it('puts cross-rib-denied before denylisted, and a grant lets the denylist decide', async () => {
    const denied = await setup({}, ['vault_banned']);
    expect(denied.host.toolReachability('spy', ['vault_banned'])).toEqual([{ name: 'vault_banned', status: 'cross-rib-denied', ownerRibId: 'vault' }]);
    const granted = await setup({ KEELSON_CROSS_RIB_GRANTS: 'spy:vault:*' }, ['vault_banned']);
    expect(granted.host.toolReachability('spy', ['vault_banned', 'vault_echo'])).toEqual([
      { name: 'vault_banned', status: 'denylisted', ownerRibId: 'vault' },
      { name: 'vault_echo', status: 'reachable', ownerRibId: 'vault' },
    ]);
  });

  it('does not throw for a non-array, it answers nothing', async () => {
    const { host } = await setup();
    expect(host.context('spy')!.getToolReachability!('spy_own' as never)).toEqual([]);
  });
});
