import { createSourceEventStream, execute, type ExecutionArgs, type ExecutionResult } from 'graphql';

/**
 * Executes each event of a subscription with a fresh context, so per-request DataLoaders never
 * serve one event's cached rows to the next (for a subscription, a "request" is one event).
 * Otherwise the same as graphql-js `subscribe`; `return()` reaches the source stream.
 */
export async function subscribeWithFreshContext(
  args: ExecutionArgs,
  makeContext: () => Promise<unknown>,
): Promise<AsyncGenerator<ExecutionResult> | ExecutionResult> {
  const source = await createSourceEventStream(args);
  if (!(Symbol.asyncIterator in Object(source))) return source as ExecutionResult;
  const iterator = (source as AsyncIterable<unknown>)[Symbol.asyncIterator]();

  const mapped: AsyncGenerator<ExecutionResult> = {
    async next() {
      const step = await iterator.next();
      if (step.done) return { value: undefined, done: true };
      const result = await execute({ ...args, rootValue: step.value, contextValue: await makeContext() });
      return { value: result, done: false };
    },
    async return() {
      await iterator.return?.();
      return { value: undefined, done: true };
    },
    async throw(err: unknown) {
      await iterator.return?.();
      throw err;
    },
    [Symbol.asyncIterator]() {
      return this;
    },
    async [Symbol.asyncDispose]() {
      await iterator.return?.();
    },
  };
  return mapped;
}
