import type { Rib, RibSurfaceDescriptor, RibViewDescriptor } from '@keelson/ribs-contract';
import { RibActivationError } from '../src/errors';
import { failedBoot, rib, servedIds, startHost } from './support/quietHost';

// The seed's Validation rules table, rule by rule: where a rib breaking it lands (skipped at
// discovery, boot fails, or dropped per request), and that the other ribs stay served.

const good = () =>
  rib('good', {
    views: [{ key: 'rib:good', canvasKind: 'view' }],
    surfaces: [{ id: 'main', title: 'Good', layout: { rows: [{ columns: [{ key: 'rib:good' }] }] } }],
  });

const surface = (ribId: string, region: Record<string, unknown>, extra: Partial<RibSurfaceDescriptor> = {}): RibSurfaceDescriptor =>
  ({ id: 'main', title: 'Main', layout: { rows: [{ columns: [{ key: `rib:${ribId}`, ...region }] }] }, ...extra }) as RibSurfaceDescriptor;

describe('rules caught at discovery: the rib is skipped with a warning and the harness boots without it', () => {
  const cases: { rule: string; key: string; candidate: unknown; warning: RegExp }[] = [
    { rule: 'id is lowercase kebab-case', key: 'Bad_Id', candidate: { id: 'Bad_Id', displayName: 'Bad' }, warning: /kebab-case/ },
    { rule: 'id is at most 64 characters', key: 'x'.repeat(65), candidate: { id: 'x'.repeat(65), displayName: 'Long' }, warning: /1 to 64/ },
    { rule: 'displayName is at least 1 character', key: 'nameless', candidate: { id: 'nameless', displayName: '' }, warning: /displayName/ },
    { rule: 'displayName is at most 80 characters', key: 'wordy', candidate: { id: 'wordy', displayName: 'W'.repeat(81) }, warning: /displayName/ },
    { rule: 'a hook is a function', key: 'hooky', candidate: { id: 'hooky', displayName: 'Hooky', onAction: 'yes' }, warning: /hook 'onAction' is not a function/ },
    { rule: 'the default export is a Rib', key: 'empty', candidate: undefined, warning: /not a Rib object/ },
  ];

  it.each(cases)('$rule', async ({ key, candidate, warning }) => {
    const { host, warnings } = await startHost({ good: good(), [key]: candidate });
    expect(await servedIds(host)).toEqual(['good']);
    expect(host.installed().map((r) => r.id)).toEqual(['good']);
    expect(warnings).toContainEqual(expect.objectContaining({ stage: 'discovery', rule: 'shape', message: expect.stringMatching(warning) }));
  });
});

describe('rules caught at activation: the throw is not caught and boot fails', () => {
  const cases: { rule: string; ribs: Record<string, Rib>; failure: RegExp; ruleName: string }[] = [
    {
      rule: 'the declared id matches its manifest key (the package suffix)',
      ribs: { good: good(), demo: rib('other') },
      failure: /declares id 'other', which diverges from its manifest key 'demo'/,
      ruleName: 'id-divergence',
    },
    {
      rule: 'view keys live under rib:<id>',
      ribs: { good: good(), demo: rib('demo', { views: [{ key: 'rib:good', canvasKind: 'view' }] }) },
      failure: /view key 'rib:good' is outside/,
      ruleName: 'namespace',
    },
    {
      rule: 'row region keys live under rib:<id>',
      ribs: { demo: rib('demo', { surfaces: [surface('demo', { key: 'demo:board' })] }) },
      failure: /row region key 'demo:board' is outside/,
      ruleName: 'namespace',
    },
    {
      rule: 'stacked column region keys live under rib:<id>',
      ribs: {
        demo: rib('demo', {
          surfaces: [{ id: 'main', title: 'Main', layout: { rows: [{ columns: [[{ key: 'rib:demo:a' }, { key: 'rib:good:b' }]] }] } }],
        }),
      },
      failure: /row region key 'rib:good:b' is outside/,
      ruleName: 'namespace',
    },
    {
      rule: 'header, banner and footer region keys live under rib:<id>',
      ribs: { demo: rib('demo', { surfaces: [{ id: 'main', title: 'Main', layout: { banner: { key: 'rib:demox' }, rows: [] } }] }) },
      failure: /banner region key 'rib:demox' is outside/,
      ruleName: 'namespace',
    },
    {
      rule: 'a surface badgeKey lives under rib:<id>',
      ribs: { demo: rib('demo', { surfaces: [surface('demo', {}, { badgeKey: 'rib:good:badge' })] }) },
      failure: /badgeKey 'rib:good:badge' is outside/,
      ruleName: 'namespace',
    },
    {
      rule: 'a workflow binds a snapshot key under rib:<id>',
      ribs: { demo: rib('demo', { contributeWorkflows: () => [{ definition: { name: 'w' }, bindSnapshotKey: 'rib:good' }] }) },
      failure: /binds snapshot key 'rib:good' outside/,
      ruleName: 'namespace',
    },
    {
      rule: 'surface ids are unique within a rib',
      ribs: { demo: rib('demo', { surfaces: [surface('demo', {}), surface('demo', {})] }) },
      failure: /declares surface id 'main' twice/,
      ruleName: 'duplicate-surface',
    },
    {
      rule: 'canvasKind is the closed markdown / view / html / log enum',
      ribs: { demo: rib('demo', { views: [{ key: 'rib:demo', canvasKind: 'pdf' } as unknown as RibViewDescriptor] }) },
      failure: /malformed view/,
      ruleName: 'descriptor-shape',
    },
    {
      rule: 'cadenceMs is an integer of at least 30000',
      ribs: { demo: rib('demo', { surfaces: [surface('demo', { workflow: 'w', cadenceMs: 29_999 })] }) },
      failure: /cadenceMs is at least 30000/,
      ruleName: 'descriptor-shape',
    },
    {
      rule: 'serverRefresh, when present, is boolean',
      ribs: { demo: rib('demo', { surfaces: [surface('demo', { serverRefresh: 'off' })] }) },
      failure: /serverRefresh is a boolean/,
      ruleName: 'descriptor-shape',
    },
    {
      rule: 'headActions carries 1–8 items',
      ribs: { demo: rib('demo', { surfaces: [surface('demo', { headActions: Array(9).fill({ label: 'Go', action: 'go' }) })] }) },
      failure: /headActions carries 1 to 8 items/,
      ruleName: 'descriptor-shape',
    },
    {
      rule: 'headActions items carry no fields/expanded/inline/selected',
      ribs: { demo: rib('demo', { surfaces: [surface('demo', { headActions: [{ label: 'Go', action: 'go', inline: true }] })] }) },
      failure: /a head action cannot carry inline/,
      ruleName: 'descriptor-shape',
    },
    {
      rule: 'headActions workflowArgs values are strings',
      ribs: { demo: rib('demo', { surfaces: [surface('demo', { headActions: [{ label: 'Go', workflow: 'w', workflowArgs: { n: 1 } }] })] }) },
      failure: /workflowArgs values are strings/,
      ruleName: 'descriptor-shape',
    },
  ];

  it.each(cases)('$rule', async ({ ribs, failure, ruleName }) => {
    const { error } = await failedBoot(ribs);
    expect(error).toBeInstanceOf(RibActivationError);
    expect(error.message).toMatch(failure);
    expect((error as RibActivationError).rule).toBe(ruleName);
  });

  it('fails before any rib code runs, so no rib half-activates', async () => {
    const registerTools = jest.fn(() => []);
    const { error } = await failedBoot({ first: rib('first', { registerTools }), demo: rib('other') });
    expect(error.message).toMatch(/diverges/);
    expect(registerTools).not.toHaveBeenCalled();
  });

  it('disposes the ribs already activated when a later activation hook throws', async () => {
    const dispose = jest.fn();
    const { error } = await failedBoot({
      first: rib('first', { dispose }),
      broken: rib('broken', {
        registerTools: () => {
          throw new Error('boom');
        },
      }),
    });
    expect(error.message).toMatch(/registerTools threw: boom/);
    expect(dispose).toHaveBeenCalledTimes(1);
  });
});

describe('rules re-checked per request: a bad descriptor is dropped and warned, never blanking other ribs', () => {
  type Mutation = { rule: string; mutate: (views: RibViewDescriptor[], surfaces: RibSurfaceDescriptor[]) => void; warning: RegExp };
  const cases: Mutation[] = [
    { rule: 'a view pushed outside the namespace', mutate: (views) => views.push({ key: 'rib:good:stolen', canvasKind: 'html' }), warning: /dropped a view: view key 'rib:good:stolen' is outside/ },
    { rule: 'a malformed view (canvasKind)', mutate: (views) => views.push({ key: 'rib:demo:x', canvasKind: 'pdf' } as unknown as RibViewDescriptor), warning: /dropped a view: malformed view/ },
    { rule: 'a surface duplicating a surface id', mutate: (_, surfaces) => surfaces.push(surface('demo', {}, { title: 'Again' })), warning: /dropped a second surface with id 'main'/ },
    { rule: 'a surface with a region outside the namespace', mutate: (_, surfaces) => surfaces.push(surface('demo', { key: 'rib:good' }, { id: 'two' })), warning: /row region key 'rib:good' is outside/ },
    { rule: 'a region cadenceMs below 30000', mutate: (_, surfaces) => surfaces.push(surface('demo', { cadenceMs: 1_000 }, { id: 'fast' })), warning: /cadenceMs is at least 30000/ },
    { rule: 'a non-boolean serverRefresh', mutate: (_, surfaces) => surfaces.push(surface('demo', { serverRefresh: 1 }, { id: 'srv' })), warning: /serverRefresh is a boolean/ },
    {
      rule: 'a head action with a pressed state',
      mutate: (_, surfaces) => surfaces.push(surface('demo', { headActions: [{ label: 'Pin', action: 'pin', selected: true }] }, { id: 'menu' })),
      warning: /a head action cannot carry selected/,
    },
  ];

  it.each(cases)('$rule', async ({ mutate, warning }) => {
    const views: RibViewDescriptor[] = [{ key: 'rib:demo', canvasKind: 'view' }];
    const surfaces: RibSurfaceDescriptor[] = [surface('demo', {})];
    const { host, warnings } = await startHost([good(), rib('demo', { views, surfaces })]);
    mutate(views, surfaces);

    const manifest = await host.manifest();
    const demo = manifest.ribs.find((r) => r.id === 'demo')!;
    expect(manifest.ribs.map((r) => r.id)).toEqual(['good', 'demo']);
    expect(demo.views).toEqual([{ key: 'rib:demo', canvasKind: 'view' }]);
    expect(demo.surfaces.map((s) => s.id)).toEqual(['main']);
    expect(demo.surfaces[0]!.title).toBe('Main');
    expect(manifest.ribs.find((r) => r.id === 'good')!.views).toHaveLength(1);
    expect(warnings).toContainEqual(expect.objectContaining({ stage: 'request', ribId: 'demo', message: expect.stringMatching(warning) }));
  });

  it('serves a live view a rib appends at runtime, held to the same rules', async () => {
    const views: RibViewDescriptor[] = [{ key: 'rib:demo', canvasKind: 'view' }];
    const { host } = await startHost([rib('demo', { views })]);
    views.push({ key: 'rib:demo:item-7', canvasKind: 'html', title: 'Item 7' });
    expect((await host.ribSummary('demo'))!.views.map((v) => v.key)).toEqual(['rib:demo', 'rib:demo:item-7']);
  });

  it('serves no views (and warns) when a rib swaps its views for something that is not an array', async () => {
    const demo = rib('demo', { views: [{ key: 'rib:demo', canvasKind: 'view' }] });
    const { host, warnings } = await startHost([good(), demo]);
    (demo as { views: unknown }).views = 'oops';
    const manifest = await host.manifest();
    expect(manifest.ribs.find((r) => r.id === 'demo')!.views).toEqual([]);
    expect(manifest.ribs.find((r) => r.id === 'good')!.views).toHaveLength(1);
    expect(warnings).toContainEqual(expect.objectContaining({ stage: 'request', message: 'serving no views: views is not an array' }));
  });
});

describe('rules enforced at run time', () => {
  it('snapshot keys: registering outside the namespace throws, reading another rib\'s key returns nothing', async () => {
    const { host } = await startHost([rib('good', { composeBundle: async () => ({ secret: 1 }) }), rib('demo')]);
    await host.recomposeSnapshot('rib:good');
    const snapshots = host.context('demo')!.getSnapshotManager!();
    expect(() => snapshots.register('rib:good:x', () => 1)).toThrow(/outside rib 'demo''s namespace/);
    await expect(snapshots.read('rib:good')).resolves.toBeUndefined();
    await expect(host.readSnapshot('rib:good')).resolves.toMatchObject({ payload: { secret: 1 } });
  });

  it('credentials resolve only under rib_<id>_*, read-only', async () => {
    const { host, credentials } = await startHost([rib('good'), rib('demo')]);
    credentials.set('rib_good_github', 'good-token');
    const ctx = host.context('demo')!;
    await expect(ctx.getCredential!('github')).resolves.toBeUndefined();
    expect(credentials.reads).toEqual(['rib_demo_github']);
    expect(Object.keys(ctx).filter((k) => /credential/i.test(k))).toEqual(['getCredential']);
  });

  it('tool names are global: a collision loses, skipped with a warning', async () => {
    const tool = (description: string) => ({ name: 'shared_ping', description, inputSchema: { safeParse: () => ({ success: true }) }, execute: () => undefined });
    const { host, warnings } = await startHost([
      rib('good', { registerTools: () => [tool('first')] as never }),
      rib('demo', { registerTools: () => [tool('second')] as never }),
    ]);
    expect(host.tool('shared_ping')).toMatchObject({ ownerRibId: 'good', description: 'first' });
    expect(warnings).toContainEqual(expect.objectContaining({ rule: 'tool-collision', ribId: 'demo' }));
    expect(await servedIds(host)).toEqual(['good', 'demo']);
  });

  it('a bound workflow\'s invalid output is dropped and the prior value kept', async () => {
    const validate = (data: unknown) => {
      if (typeof (data as { count?: unknown }).count !== 'number') throw new Error('count must be a number');
      return data;
    };
    const { host, warnings } = await startHost([rib('demo', { contributeWorkflows: () => [{ definition: { name: 'demo-refresh' }, bindSnapshotKey: 'rib:demo', validate }] })]);
    const entry = host.workflows().find((w) => w.name === 'demo-refresh')!;
    await entry.publish!({ count: 1 });
    await expect(entry.publish!({ count: 'many' })).resolves.toBeUndefined();
    await expect(host.readSnapshot('rib:demo')).resolves.toMatchObject({ version: 1, payload: { count: 1 } });
    expect(warnings).toContainEqual(expect.objectContaining({ rule: 'snapshot-validator', message: expect.stringMatching(/count must be a number/) }));
  });
});
