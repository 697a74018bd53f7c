import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UnresolvedConfigVariableError } from '../src/config/envRefs';
import { fileConfigPort, readConfigFile } from '../src/config/fileConfigPort';
import { parseCrossRibGrantsEnv, resolveRibWorkflowGrants, isRibWorkflowGranted } from '../src/config/grants';
import { parseHostEnv } from '../src/config/hostEnv';
import type { RibWarning } from '../src/warnings';
import { rib, startHost } from './support/quietHost';

const home = (files: Record<string, string> = {}) => {
  const dir = mkdtempSync(join(tmpdir(), 'keelson-config-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
};

describe('the config file', () => {
  it('reads as {} when absent', () => {
    expect(readConfigFile(home())).toEqual({ ok: true, config: {}, ignored: [] });
  });

  it('reads config.json, or YAML when there is no JSON', () => {
    expect(readConfigFile(home({ 'config.yaml': 'crossRibGrants:\n  a:\n    b: ["*"]\n' }))).toMatchObject({ ok: true, config: { crossRibGrants: { a: { b: ['*'] } } } });
    const both = home({ 'config.json': '{"toolDenylist":["x"]}', 'config.yml': 'toolDenylist: [y]' });
    expect(readConfigFile(both)).toMatchObject({ ok: true, config: { toolDenylist: ['x'] }, ignored: [join(both, 'config.yml')] });
  });

  it('keeps keys other services own', () => {
    expect(readConfigFile(home({ 'config.json': '{"providers":{"claude":true}}' }))).toMatchObject({ config: { providers: { claude: true } } });
  });

  it('reports a file that does not parse or validate, and the port reads it as {} with a warning', () => {
    expect(readConfigFile(home({ 'config.json': '{nope' }))).toMatchObject({ ok: false, problem: expect.stringMatching(/not valid JSON/) });
    const bad = home({ 'config.json': '{"crossRibGrants":{"a":{"b":[]}}}' });
    expect(readConfigFile(bad)).toMatchObject({ ok: false, problem: expect.stringMatching(/config\.crossRibGrants\.a\.b/) });
    const warnings: RibWarning[] = [];
    expect(fileConfigPort(bad, (w) => warnings.push(w)).load()).toEqual({});
    expect(warnings).toEqual([expect.objectContaining({ rule: 'config-file' })]);
  });

  it('resolves ${VAR} and ${VAR:-default} in string values before validation (seed 002), keys as written', () => {
    const dir = home({
      'config.yaml': [
        'defaultProvider: ${KEELSON_TEST_PROVIDER}',
        'providers:',
        '  local: { type: openai-compatible, baseUrl: "http://${KEELSON_TEST_HOST:-127.0.0.1}:${KEELSON_TEST_PORT:-8080}/v1", apiKeyEnv: "LITERAL_$${NOT_A_REF}" }',
        'toolDenylist: ["${KEELSON_TEST_EMPTY}x", "${KEELSON_TEST_EMPTY:-fallback}"]',
        '',
      ].join('\n'),
    });
    const read = readConfigFile(dir, { KEELSON_TEST_PROVIDER: 'local', KEELSON_TEST_PORT: '9999', KEELSON_TEST_EMPTY: '' });
    expect(read).toMatchObject({
      ok: true,
      config: {
        defaultProvider: 'local',
        providers: { local: { baseUrl: 'http://127.0.0.1:9999/v1', apiKeyEnv: 'LITERAL_${NOT_A_REF}' } },
        toolDenylist: ['x', 'fallback'],
      },
    });
  });

  it('stops with an error naming the variable, the key and the file when a variable without a default is unset', async () => {
    const dir = home({ 'config.json': '{"toolDenylist":["ok","${KEELSON_TEST_SURELY_UNSET}"]}' });
    expect(() => readConfigFile(dir, {})).toThrow(new UnresolvedConfigVariableError('KEELSON_TEST_SURELY_UNSET', join(dir, 'config.json'), 'config.toolDenylist[1]'));
    expect(() => readConfigFile(dir, {})).toThrow(/config\.json: config\.toolDenylist\[1\] uses \$\{KEELSON_TEST_SURELY_UNSET\}, which is not set and has no default/);
    // The rib host does not start on it (it would run without a value the file says it needs).
    await expect(startHost([rib('spy')], { home: dir, config: undefined })).rejects.toThrow(/KEELSON_TEST_SURELY_UNSET/);
  });

  it('grants cross-rib calls from <home>/config.yaml when the host reads its home', async () => {
    const dir = home({ 'config.yaml': 'crossRibGrants:\n  spy:\n    vault: [vault_x]\n' });
    const { host } = await startHost([rib('spy'), rib('vault')], { home: dir, config: undefined });
    expect(host.grants.crossRib()).toEqual({ spy: { vault: ['vault_x'] } });
  });
});

describe('grant variables', () => {
  it('parse caller:target:tools entries separated by ; or newlines, warning about malformed ones', () => {
    const warnings: RibWarning[] = [];
    const grants = parseCrossRibGrantsEnv(' a:b:t1,t2 ;\n c:d:* ; broken ; e:f ; g:h:i:j ', (w) => warnings.push(w));
    expect([...grants.entries()].map(([caller, t]) => [caller, [...t.entries()].map(([target, names]) => [target, [...names]])])).toEqual([
      ['a', [['b', ['t1', 't2']]]],
      ['c', [['d', ['*']]]],
    ]);
    expect(warnings.map((w) => w.message)).toEqual([
      expect.stringMatching(/ignoring 'broken'/),
      expect.stringMatching(/ignoring 'e:f'/),
      expect.stringMatching(/ignoring 'g:h:i:j'/),
    ]);
  });

  it('union the workflow grants of the config file and the environment', () => {
    const grants = resolveRibWorkflowGrants({ demo: ['deploy'] }, 'KEELSON_RIB_WORKFLOW_GRANTS', 'demo:review;ops:*');
    expect(isRibWorkflowGranted(grants, 'demo', 'deploy')).toBe(true);
    expect(isRibWorkflowGranted(grants, 'demo', 'review')).toBe(true);
    expect(isRibWorkflowGranted(grants, 'demo', 'other')).toBe(false);
    expect(isRibWorkflowGranted(grants, 'ops', 'anything')).toBe(true);
  });

  it('reach the host: start and approval grants are separate', async () => {
    const { host } = await startHost([rib('demo')], { env: { KEELSON_RIB_WORKFLOW_GRANTS: 'demo:deploy', KEELSON_RIB_APPROVAL_GRANTS: 'demo:review' } });
    expect(host.grants.canStartWorkflow('demo', 'deploy')).toBe(true);
    expect(host.grants.canAnswerGates('demo', 'deploy')).toBe(false);
    expect(host.grants.canAnswerGates('demo', 'review')).toBe(true);
  });
});

describe('the host environment', () => {
  it('defaults the call timeout to 30000 and the home to ~/.keelson, and treats empty as unset', () => {
    const env = parseHostEnv({ KEELSON_RIBS: '  ' });
    expect(env.crossRibCallTimeoutMs).toBe(30_000);
    expect(env.home).toMatch(/\.keelson$/);
    expect(env.ribs).toBeUndefined();
  });

  it('splits KEELSON_RIBS and fails fast on a bad timeout', () => {
    expect(parseHostEnv({ KEELSON_RIBS: 'a, b,,c' }).ribs).toEqual(['a', 'b', 'c']);
    expect(() => parseHostEnv({ KEELSON_CROSS_RIB_CALL_TIMEOUT_MS: 'soon' })).toThrow(/KEELSON_CROSS_RIB_CALL_TIMEOUT_MS/);
  });
});
