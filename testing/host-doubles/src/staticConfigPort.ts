import { keelsonConfigSchema, type ConfigPort, type KeelsonConfig } from '@keelson/host';

/** A fixed config, validated once (tests and embedders). */
export function staticConfigPort(config: KeelsonConfig = {}): ConfigPort {
  const parsed = keelsonConfigSchema.parse(config);
  return { load: () => parsed };
}
