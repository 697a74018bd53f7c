import { ribAuthStatusSchema, type RibAuthStatus } from '@keelson/ribs-contract';
import type { ActiveRib } from '../activation/activeRib';
import { errorMessage } from '../errors';

/** How long a probe may take before it reads as unauthenticated. */
export const AUTH_PROBE_TIMEOUT_MS = 10_000;

/**
 * Runs a rib's credential probe. Undefined when the rib declares none. A throwing, hanging or
 * malformed probe reads as `{ authenticated: false, statusMessage }` and never fails the caller.
 */
export async function probeAuthStatus(active: ActiveRib, timeoutMs = AUTH_PROBE_TIMEOUT_MS): Promise<RibAuthStatus | undefined> {
  const { rib, ctx } = active;
  if (typeof rib.authStatus !== 'function') return undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    const raw = await Promise.race([
      Promise.resolve().then(() => rib.authStatus!(ctx)),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`auth probe timed out after ${timeoutMs}ms`)), timeoutMs);
      }),
    ]);
    const parsed = ribAuthStatusSchema.safeParse(raw);
    return parsed.success ? parsed.data : { authenticated: false, statusMessage: 'auth probe returned a malformed status' };
  } catch (err) {
    return { authenticated: false, statusMessage: errorMessage(err) };
  } finally {
    if (timer) clearTimeout(timer);
  }
}
