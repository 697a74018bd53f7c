import type { Actor } from '@keelson/schema';
import { runAsCaller } from '@keelson/service';

/**
 * Runs an activity's store writes as `actor` when the workflow carried one (a steer's sender, whoever
 * asked for a cancel), so the events they append name that caller as a request's would. The identity
 * only: no scopes, since nothing an activity does authorizes by them.
 */
export function asActor<T>(actor: Actor | undefined, fn: () => T): T {
  return actor ? runAsCaller({ ...actor, scopes: [] }, fn) : fn();
}
