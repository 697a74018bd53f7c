import { RibActivationError } from '../src/errors';
import { failedBoot, rib, servedIds, startHost } from './support/quietHost';
import { ribModule, TempModules } from './support/tempPackages';

// Discovery from a real node_modules layout: fake @keelson/rib-* packages written to a temp folder.

const modules = new TempModules();
afterAll(() => modules.cleanup());

const refreshYaml = ['name: alpha-refresh', 'description: Refresh the alpha board', 'nodes:', '  - id: collect', '    bash: echo {}', ''].join('\n');

const root = modules.root('app', [
  {
    dir: 'rib-alpha',
    index: ribModule(`{ id: 'alpha', displayName: 'Alpha', views: [{ key: 'rib:alpha', canvasKind: 'view' }],
      contributeWorkflows: () => [{ definition: { name: 'alpha-code' } }, { definition: { name: 'alpha-shadowed', source: 'code' } }] }`),
    workflows: {
      'refresh.yaml': refreshYaml,
      'alpha-shadowed.yml': 'name: alpha-shadowed\nsource: yaml\n',
      'nameless.yaml': 'nodes: []\n',
      'broken.yaml': 'name: [unclosed\n',
      'README.txt': 'not a workflow',
    },
  },
  { dir: 'rib-beta', index: `module.exports = { id: 'beta', displayName: 'Beta' };` },
  { dir: 'rib-throws', index: `throw new Error('missing native module');` },
  { dir: 'rib-shapeless', index: ribModule(`{ id: 'shapeless', displayName: 'Shapeless', registerTools: [] }`) },
  { dir: 'rib-misnamed', name: '@someone/rib-misnamed', index: ribModule(`{ id: 'misnamed', displayName: 'Misnamed' }`) },
  { dir: 'rib-twin', index: ribModule(`{ id: 'alpha', displayName: 'Alpha twin' }`) },
  { dir: 'not-a-rib', index: ribModule(`{ id: 'nope', displayName: 'Nope' }`) },
]);

const discover = (options: Parameters<typeof startHost>[1] = {}) => startHost({}, { discover: true, nodeModulesRoots: [root], ...options });

describe('discovery of installed @keelson/rib-* packages', () => {
  it('activates the well-formed packages and skips each broken one with a warning', async () => {
    const { host, warnings } = await discover();
    expect(await servedIds(host)).toEqual(['alpha', 'beta']);
    expect(host.installed().map((r) => [r.id, r.source, r.active, r.packageName])).toEqual([
      ['alpha', 'discovered', true, '@keelson/rib-alpha'],
      ['beta', 'discovered', true, '@keelson/rib-beta'],
    ]);
    const discovery = warnings.filter((w) => w.stage === 'discovery');
    expect(discovery).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ rule: 'import', ribId: 'throws', message: expect.stringMatching(/missing native module/) }),
        expect.objectContaining({ rule: 'shape', ribId: 'shapeless', message: expect.stringMatching(/hook 'registerTools' is not a function/) }),
        expect.objectContaining({ rule: 'shape', ribId: 'misnamed', message: expect.stringMatching(/expected '@keelson\/rib-misnamed'/) }),
        expect.objectContaining({ rule: 'duplicate-id', ribId: 'alpha', message: expect.stringMatching(/@keelson\/rib-twin declares id 'alpha'/) }),
      ]),
    );
  });

  it('lists the YAML workflows of a package\'s workflows/ folder with their source, a code entry winning over its own file', async () => {
    const { host, warnings } = await discover();
    expect(host.workflows().map((w) => [w.name, w.origin])).toEqual([
      ['alpha-code', 'code'],
      ['alpha-shadowed', 'code'],
      ['nameless', 'yaml'],
      ['alpha-refresh', 'yaml'],
    ]);
    expect(host.workflows().find((w) => w.name === 'alpha-shadowed')!.definition).toEqual({ name: 'alpha-shadowed', source: 'code' });
    const refresh = host.workflows().find((w) => w.name === 'alpha-refresh')!;
    expect(refresh).toMatchObject({ ribId: 'alpha', origin: 'yaml', description: 'Refresh the alpha board', source: refreshYaml });
    expect(refresh.path).toMatch(/rib-alpha\/workflows\/refresh\.yaml$/);
    expect(refresh.definition).toEqual({ name: 'alpha-refresh', description: 'Refresh the alpha board', nodes: [{ id: 'collect', bash: 'echo {}' }] });
    expect(warnings).toContainEqual(expect.objectContaining({ rule: 'workflow-file', message: expect.stringMatching(/broken\.yaml/) }));
    expect(warnings).toContainEqual(expect.objectContaining({ rule: 'workflow-collision', message: expect.stringMatching(/'alpha-shadowed' \(yaml\) is shadowed by rib 'alpha''s code entry/) }));
  });

  it('activates only what KEELSON_RIBS names: installed and active differ', async () => {
    const { host, warnings } = await discover({ env: { KEELSON_RIBS: 'beta, ghost, Bad!' } });
    expect(host.ribIds).toEqual(['beta']);
    expect(host.installed().map((r) => [r.id, r.active])).toEqual([
      ['alpha', false],
      ['beta', true],
    ]);
    expect(host.workflows()).toEqual([]);
    expect(warnings.filter((w) => w.stage === 'filter').map((w) => w.message)).toEqual([
      "KEELSON_RIBS names 'ghost', which is not installed; ignored",
      expect.stringMatching(/KEELSON_RIBS names 'Bad!', which is not a rib id/),
    ]);
  });

  it('resolves a package from the nearest node_modules, warning about a farther copy', async () => {
    const far = modules.root('far', [{ dir: 'rib-beta', index: `module.exports = { id: 'beta', displayName: 'Far beta' };` }]);
    const { host, warnings } = await startHost({}, { discover: true, nodeModulesRoots: [root, far] });
    expect(host.rib('beta')!.displayName).toBe('Beta');
    expect(warnings).toContainEqual(expect.objectContaining({ rule: 'duplicate-id', ribId: 'beta', message: expect.stringMatching(/shadowed/) }));
  });

  it('fails boot for a package whose rib declares an id diverging from its package', async () => {
    const diverging = modules.root('diverging', [{ dir: 'rib-gamma', index: ribModule(`{ id: 'delta', displayName: 'Delta' }`) }]);
    const { error } = await failedBoot({}, { discover: true, nodeModulesRoots: [diverging] });
    expect(error).toBeInstanceOf(RibActivationError);
    expect(error.message).toBe("rib 'gamma': declares id 'delta', which diverges from its package @keelson/rib-gamma");
  });

  it('fails boot when an embedder wires a rib id that is also installed', async () => {
    const { error } = await failedBoot({ beta: rib('beta') }, { discover: true, nodeModulesRoots: [root] });
    expect(error).toMatchObject({ rule: 'duplicate-id', message: "rib 'beta': rib id 'beta' is activated twice" });
  });

  it('bypasses discovery when given an explicit available map', async () => {
    const { host } = await startHost({ solo: rib('solo') }, { nodeModulesRoots: [root] });
    expect(host.ribIds).toEqual(['solo']);
  });

  it('finds the real workspace packages through Node\'s resolution paths by default, passing over the host itself', async () => {
    const { host, warnings } = await startHost({}, { discover: true, nodeModulesRoots: undefined });
    expect(host.installed().every((r) => r.packageName?.startsWith('@keelson/rib-') && r.id !== 'host')).toBe(true);
    expect(warnings.filter((w) => w.stage === 'discovery')).toEqual([]);
  });
});
