import { readConfigFile, type KeelsonConfig } from '@keelson/host';
import { parseEnv } from '@keelson/schema';
import { ANTHROPIC_MODEL_CLASSES, anthropicProvider } from '../anthropic/anthropicProvider';
import { OPENAI_MODEL_CLASSES, openAiCompatibleProvider } from '../openai/openaiCompatibleProvider';
import type { ModelProvider } from '../types';
import { parseProviderEntries, type ProviderConfig } from './providerConfig';
import { ProviderRegistry } from './providerRegistry';

/** Default models of the two built-in providers. */
export const DEFAULT_MODELS = { anthropic: 'claude-sonnet-4-5', openai: 'gpt-5' } as const;
const DEFAULT_BASE_URLS = { anthropic: 'https://api.anthropic.com', openai: 'https://api.openai.com/v1' } as const;

export interface ProviderRegistryOptions {
  /** Read for the KEELSON_ANTHROPIC_* / KEELSON_OPENAI_* variables, the keys and `apiKeyEnv` names. @default process.env */
  env?: Record<string, string | undefined>;
  /** The operator's config file (its `providers`, `modelClasses`, `defaultProvider`). @default {} */
  config?: KeelsonConfig;
  /** Whether turns keep sessions (a session store is wired): the providers' `sessionResume`. @default true */
  sessionResume?: boolean;
  warn?: (message: string) => void;
}

/**
 * The registry of the environment and the config file. `anthropic` (Messages API) is registered when
 * KEELSON_ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY, KEELSON_MODEL_BASE_URL or `providers.anthropic` is
 * set; `openai` (Chat Completions) likewise with the OPENAI variables. Each further `providers.<id>`
 * entry registers one more endpoint of its `type`. For the built-in two, the variables beat the file;
 * `enabled: false` in the file unregisters any provider.
 */
export function createProviderRegistry(opts: ProviderRegistryOptions = {}): ProviderRegistry {
  const raw = opts.env ?? process.env;
  const env = parseEnv(raw);
  const config = opts.config ?? {};
  const warn = opts.warn ?? (() => undefined);
  const entries = parseProviderEntries(config.providers, warn);
  const sessionResume = opts.sessionResume ?? true;
  const providers: ModelProvider[] = [];
  const keyFrom = (cfg: ProviderConfig | undefined) => (cfg?.apiKeyEnv ? raw[cfg.apiKeyEnv]?.trim() || undefined : undefined);
  const shared = env.KEELSON_MODEL_BASE_URL?.replace(/\/+$/, '');

  const anthropicCfg = entries.anthropic;
  if (anthropicCfg?.enabled !== false && (env.KEELSON_ANTHROPIC_BASE_URL || env.ANTHROPIC_API_KEY || shared || anthropicCfg)) {
    const viaShared = !env.KEELSON_ANTHROPIC_BASE_URL && !anthropicCfg?.baseUrl && shared !== undefined;
    providers.push(
      anthropicProvider({
        id: 'anthropic',
        displayName: anthropicCfg?.displayName ?? 'Anthropic',
        baseUrl: env.KEELSON_ANTHROPIC_BASE_URL ?? anthropicCfg?.baseUrl ?? shared ?? DEFAULT_BASE_URLS.anthropic,
        apiKey: env.ANTHROPIC_API_KEY ?? keyFrom(anthropicCfg) ?? (viaShared ? env.KEELSON_MODEL_API_KEY : undefined),
        defaultModel: env.KEELSON_ANTHROPIC_MODEL ?? anthropicCfg?.defaultModel ?? DEFAULT_MODELS.anthropic,
        modelClasses: { ...ANTHROPIC_MODEL_CLASSES, ...anthropicCfg?.modelClasses },
        maxTokens: anthropicCfg?.maxTokens,
        sessionResume,
      }),
    );
  }

  const openaiCfg = entries.openai;
  if (openaiCfg?.enabled !== false && (env.KEELSON_OPENAI_BASE_URL || env.OPENAI_API_KEY || shared || openaiCfg)) {
    const viaShared = !env.KEELSON_OPENAI_BASE_URL && !openaiCfg?.baseUrl && shared !== undefined;
    providers.push(
      openAiCompatibleProvider({
        id: 'openai',
        displayName: openaiCfg?.displayName ?? 'OpenAI-compatible',
        baseUrl: env.KEELSON_OPENAI_BASE_URL ?? openaiCfg?.baseUrl ?? (shared ? `${shared}/v1` : DEFAULT_BASE_URLS.openai),
        apiKey: env.OPENAI_API_KEY ?? keyFrom(openaiCfg) ?? (viaShared ? env.KEELSON_MODEL_API_KEY : undefined),
        defaultModel: env.KEELSON_OPENAI_MODEL ?? openaiCfg?.defaultModel ?? DEFAULT_MODELS.openai,
        modelClasses: { ...OPENAI_MODEL_CLASSES, ...openaiCfg?.modelClasses },
        maxTokens: openaiCfg?.maxTokens,
        reasoningEffort: openaiCfg?.reasoningEffort ?? false,
        sessionResume,
      }),
    );
  }

  for (const [id, cfg] of Object.entries(entries)) {
    if (id === 'anthropic' || id === 'openai' || cfg.enabled === false) continue;
    const defaultModel = cfg.defaultModel ?? cfg.modelClasses?.balanced;
    if (!cfg.baseUrl || !defaultModel) {
      warn(`providers.${id}: skipped: ${!cfg.baseUrl ? 'baseUrl' : 'defaultModel (or modelClasses.balanced)'} is required for a provider of your own`);
      continue;
    }
    const common = { id, displayName: cfg.displayName ?? id, baseUrl: cfg.baseUrl, apiKey: keyFrom(cfg), defaultModel, modelClasses: cfg.modelClasses, maxTokens: cfg.maxTokens, sessionResume };
    providers.push(cfg.type === 'anthropic' ? anthropicProvider(common) : openAiCompatibleProvider({ ...common, reasoningEffort: cfg.reasoningEffort ?? false }));
  }

  if (config.defaultProvider !== undefined && typeof config.defaultProvider !== 'string') warn('defaultProvider: ignored: expected a provider id');
  const fileDefault = typeof config.defaultProvider === 'string' ? config.defaultProvider : undefined;
  return new ProviderRegistry(providers, { defaultId: env.KEELSON_DEFAULT_PROVIDER ?? fileDefault, modelClasses: config.modelClasses, warn });
}

/**
 * The registry of `<home>/config.json` (or YAML) and the environment. An unreadable or invalid file
 * is warned about and read as empty, as the rib host reads it.
 */
export function loadProviderRegistry(opts: { home: string } & Omit<ProviderRegistryOptions, 'config'>): ProviderRegistry {
  const read = readConfigFile(opts.home, opts.env ?? process.env);
  if (!read.ok) opts.warn?.(`ignoring ${read.path}: ${read.problem}`);
  return createProviderRegistry({ ...opts, config: read.ok ? read.config : {} });
}
