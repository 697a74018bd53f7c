import type { RibModelClass } from './agentTurn';

/** A provider registered at call time; listing it grants no access beyond `runAgentTurn` routing. */
export interface RibProviderInfo {
  readonly id: string;
  readonly displayName: string;
  readonly defaultModel?: string;
  /** The provider's class map with the config file's `modelClasses` applied. */
  readonly modelClasses?: Readonly<Partial<Record<RibModelClass, string>>>;
}
