import type { ModelClass } from '@keelson/schema';
import type { ModelProvider } from '../types';

/** What every HTTP model provider is configured with. */
export interface HttpProviderOptions {
  /** @default the protocol's name */
  id?: string;
  /** @default the protocol's display name */
  displayName?: string;
  /** Where the API answers; each protocol appends its own path. */
  baseUrl: string;
  /** The API key; absent sends none (a local server). */
  apiKey?: string;
  defaultModel: string;
  modelClasses?: Partial<Record<ModelClass, string>>;
  maxTokens?: number;
  /** Sessions are kept by the turn engine; true when it has a session store. @default true */
  sessionResume?: boolean;
}

/** What a provider says of itself (everything but `call`), from its options over the protocol's defaults. */
export function providerFacts(opts: HttpProviderOptions, protocol: { id: string; displayName: string; reasoningEffort: boolean }): Omit<ModelProvider, 'call'> {
  return {
    id: opts.id ?? protocol.id,
    displayName: opts.displayName ?? protocol.displayName,
    defaultModel: opts.defaultModel,
    modelClasses: { ...(opts.modelClasses ?? {}) },
    capabilities: { streaming: true, tools: true, sessionResume: opts.sessionResume ?? true, reasoningEffort: protocol.reasoningEffort },
    ...(opts.maxTokens ? { maxTokens: opts.maxTokens } : {}),
  };
}
