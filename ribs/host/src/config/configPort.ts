import type { KeelsonConfig } from './keelsonConfig';

/**
 * Where the host reads the operator's config file from. The default reads
 * `<KEELSON_HOME>/config.json` (or `config.yaml` / `config.yml`); tests and embedders pass
 * `staticConfigPort(config)` (`@keelson/host-doubles`).
 */
export interface ConfigPort {
  /** The config in force; an absent file is `{}`. */
  load(): Promise<KeelsonConfig> | KeelsonConfig;
}
