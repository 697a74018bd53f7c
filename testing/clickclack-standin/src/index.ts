import { join } from 'node:path';

export { startStandin, STANDIN_VERSION } from './server';
export type { RunningStandin, StandinServerOptions } from './server';
export { SCOPE_BUNDLES } from './scopes';
export { STANDIN_VERSION_ENV } from './cli';

/** The stand-in executable (`clickclack serve …` speaking the recorded wire protocol). */
export const STANDIN_BIN = join(__dirname, '..', 'bin', 'clickclack');

/** The real ClickClack when CLICKCLACK_BIN names it, else the stand-in. */
export function clickclackBinary(): string {
  return process.env.CLICKCLACK_BIN?.trim() || STANDIN_BIN;
}
