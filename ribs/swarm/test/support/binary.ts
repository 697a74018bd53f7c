import { join } from 'node:path';

export { freePort } from '@keelson/service';

/** The stand-in executable (`clickclack serve …` speaking the recorded wire protocol). */
export const STANDIN_BIN = join(__dirname, '..', '..', 'bin', 'clickclack');

/** The real ClickClack when CLICKCLACK_BIN names it, else the stand-in. */
export function clickclackBinary(): string {
  return process.env.CLICKCLACK_BIN?.trim() || STANDIN_BIN;
}
