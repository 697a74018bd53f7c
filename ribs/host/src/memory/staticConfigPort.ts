import type { ConfigPort } from '../config/configPort';
import { keelsonConfigSchema, type KeelsonConfig } from '../config/keelsonConfig';

/** A fixed config, validated once (tests and embedders). */
export function staticConfigPort(config: KeelsonConfig = {}): ConfigPort {
  const parsed = keelsonConfigSchema.parse(config);
  return { load: () => parsed };
}
