import { AsyncLocalStorage } from 'node:async_hooks';
import type { Caller } from '@keelson/schema';

const storage = new AsyncLocalStorage<Caller>();

/**
 * Runs `fn` on behalf of `caller`: code it reaches asynchronously (resolvers, services, the event
 * log recording an event's actor) finds the caller with {@link currentCaller}.
 */
export function runAsCaller<T>(caller: Caller, fn: () => T): T {
  return storage.run(caller, fn);
}

/** The caller of the request being served, if any. */
export function currentCaller(): Caller | undefined {
  return storage.getStore();
}
