import type { CliDriver } from './drivers/cliDriver';
import { ClaudeCodeDriver } from './drivers/claudeCode';
import { CodexDriver } from './drivers/codex';
import { OpencodeDriver } from './drivers/opencode';
import { PiDriver } from './drivers/pi';
import { QwenCodeDriver } from './drivers/qwenCode';
import { UnavailableDriver } from './drivers/unavailable';
import { HARNESS_IDS, type HarnessId } from './ids';
import type { HarnessSettings } from './settings';

/** One driver per harness id, in the seed's order. */
export type DriverRegistry = Readonly<Record<HarnessId, CliDriver>>;

/**
 * The eight drivers: real headless drivers for the five CLIs installed from npm, honest
 * unavailable drivers for grok-build, kimi-code and hermes. `overrides` replaces drivers (tests).
 */
export function createDriverRegistry(settings: HarnessSettings, overrides: Partial<Record<HarnessId, CliDriver>> = {}): DriverRegistry {
  const drivers: Record<HarnessId, CliDriver> = {
    'claude-code': new ClaudeCodeDriver(settings),
    'grok-build': new UnavailableDriver(settings, 'grok-build', 'Grok Build', 'grok'),
    'kimi-code': new UnavailableDriver(settings, 'kimi-code', 'Kimi Code', 'kimi'),
    hermes: new UnavailableDriver(settings, 'hermes', 'Hermes', 'hermes'),
    codex: new CodexDriver(settings),
    opencode: new OpencodeDriver(settings),
    pi: new PiDriver(settings),
    'qwen-code': new QwenCodeDriver(settings),
    ...overrides,
  };
  return Object.fromEntries(HARNESS_IDS.map((id) => [id, drivers[id]])) as DriverRegistry;
}
