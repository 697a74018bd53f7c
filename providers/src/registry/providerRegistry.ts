import type { ModelClass } from '@keelson/schema';
import type { KeelsonConfig } from '@keelson/host';
import type { RibProviderInfo } from '@keelson/ribs-contract';
import type { ModelProvider } from '../types';

type ClassMap = Partial<Record<ModelClass, string>>;

/** How a turn names its model. */
export interface ModelChoice {
  /** Wins over `modelClass`. */
  model?: string;
  modelClass?: ModelClass;
}

/**
 * The providers registered at boot, the default one, and the config file's `modelClasses` (provider
 * id → class → model), which win over each provider's own class map.
 */
export class ProviderRegistry {
  private readonly byId = new Map<string, ModelProvider>();
  private readonly modelClasses: NonNullable<KeelsonConfig['modelClasses']>;
  /** The provider a turn gets when it names none (or one that is not registered). */
  readonly defaultProvider: ModelProvider | undefined;

  constructor(
    providers: readonly ModelProvider[],
    opts: { defaultId?: string; modelClasses?: KeelsonConfig['modelClasses']; warn?: (message: string) => void } = {},
  ) {
    for (const p of providers) {
      if (this.byId.has(p.id)) {
        opts.warn?.(`provider '${p.id}' is registered twice; keeping the first`);
        continue;
      }
      this.byId.set(p.id, p);
    }
    this.modelClasses = opts.modelClasses ?? {};
    let chosen = opts.defaultId ? this.byId.get(opts.defaultId) : undefined;
    if (opts.defaultId && !chosen) {
      opts.warn?.(`default provider '${opts.defaultId}' is not registered (registered: ${[...this.byId.keys()].join(', ') || 'none'})`);
    }
    chosen ??= this.byId.get('anthropic') ?? [...this.byId.values()][0];
    this.defaultProvider = chosen;
  }

  /** Every registered provider, in registration order. */
  list(): ModelProvider[] {
    return [...this.byId.values()];
  }

  get(id: string): ModelProvider | undefined {
    return this.byId.get(id);
  }

  /** The provider a `provider` hint names when it is registered, else the default (a hint, not a pin). */
  pick(hint?: string): ModelProvider | undefined {
    return (hint ? this.byId.get(hint) : undefined) ?? this.defaultProvider;
  }

  /** A provider's class map with the config file's `modelClasses` for it applied. */
  classMap(provider: ModelProvider): ClassMap {
    return { ...provider.modelClasses, ...(this.modelClasses[provider.id] ?? {}) };
  }

  /**
   * The model a turn runs: an explicit model; else its class from the config file's `modelClasses`
   * for this provider, then the provider's own class map; else the provider's default model.
   */
  resolveModel(provider: ModelProvider, choice: ModelChoice): string {
    if (choice.model) return choice.model;
    if (choice.modelClass) {
      const fromConfig = this.modelClasses[provider.id]?.[choice.modelClass];
      if (fromConfig) return fromConfig;
      const own = provider.modelClasses[choice.modelClass];
      if (own) return own;
    }
    return provider.defaultModel;
  }

  /** The read-only snapshot `getProviders` returns. */
  info(): RibProviderInfo[] {
    return this.list().map((p) => {
      const classes = this.classMap(p);
      return Object.freeze({
        id: p.id,
        displayName: p.displayName,
        defaultModel: p.defaultModel,
        ...(Object.keys(classes).length > 0 ? { modelClasses: Object.freeze(classes) } : {}),
      });
    });
  }
}
