import { createProviderRegistry } from './createProviderRegistry';

describe('createProviderRegistry', () => {
  it('registers nothing without a key, a base URL or a config entry', () => {
    const registry = createProviderRegistry({ env: {} });
    expect(registry.list()).toEqual([]);
    expect(registry.pick('anthropic')).toBeUndefined();
  });

  it('registers both built-ins against KEELSON_MODEL_BASE_URL with its key, the specific variables winning', () => {
    const registry = createProviderRegistry({
      env: { KEELSON_MODEL_BASE_URL: 'http://127.0.0.1:9/', KEELSON_OPENAI_BASE_URL: 'http://127.0.0.1:8/v1', KEELSON_OPENAI_MODEL: 'local-model' },
    });
    expect(registry.list().map((p) => [p.id, p.defaultModel])).toEqual([
      ['anthropic', 'claude-sonnet-4-5'],
      ['openai', 'local-model'],
    ]);
    expect(registry.defaultProvider?.id).toBe('anthropic');
    expect(registry.get('openai')!.capabilities).toEqual({ streaming: true, tools: true, sessionResume: true, reasoningEffort: false });
    expect(registry.get('anthropic')!.capabilities.reasoningEffort).toBe(true);
  });

  it("reads the config file's providers: extra endpoints, disabled built-ins, the default and class maps", () => {
    const warnings: string[] = [];
    const registry = createProviderRegistry({
      env: { ANTHROPIC_API_KEY: 'k', LOCAL_KEY: 'secret' },
      sessionResume: false,
      warn: (m) => warnings.push(m),
      config: {
        defaultProvider: 'local',
        providers: {
          anthropic: { enabled: false },
          local: { baseUrl: 'http://127.0.0.1:7/v1', apiKeyEnv: 'LOCAL_KEY', defaultModel: 'qwen', modelClasses: { fast: 'qwen-small' }, reasoningEffort: true },
          broken: { defaultModel: 'x' },
          typo: { baseURL: 'http://127.0.0.1:6/v1' },
        },
        modelClasses: { local: { deep: 'qwen-large' } },
      },
    });
    expect(registry.list().map((p) => p.id)).toEqual(['local']);
    expect(registry.defaultProvider?.id).toBe('local');
    const local = registry.get('local')!;
    expect(local.capabilities).toMatchObject({ sessionResume: false, reasoningEffort: true });
    expect(registry.resolveModel(local, { modelClass: 'deep' })).toBe('qwen-large');
    expect(registry.resolveModel(local, { modelClass: 'fast' })).toBe('qwen-small');
    expect(registry.resolveModel(local, { modelClass: 'balanced' })).toBe('qwen');
    expect(registry.info()).toEqual([{ id: 'local', displayName: 'local', defaultModel: 'qwen', modelClasses: { fast: 'qwen-small', deep: 'qwen-large' } }]);
    expect(warnings).toEqual([
      expect.stringMatching(/^providers\.typo: skipped: providers\.typo: .*baseURL/),
      'providers.broken: skipped: baseUrl is required for a provider of your own',
    ]);
  });

  it('falls back from a default provider that is not registered, saying so', () => {
    const warnings: string[] = [];
    const registry = createProviderRegistry({ env: { OPENAI_API_KEY: 'k', KEELSON_DEFAULT_PROVIDER: 'nope' }, warn: (m) => warnings.push(m) });
    expect(registry.defaultProvider?.id).toBe('openai');
    expect(registry.pick('nope')?.id).toBe('openai');
    expect(warnings).toEqual(["default provider 'nope' is not registered (registered: openai)"]);
  });
});
