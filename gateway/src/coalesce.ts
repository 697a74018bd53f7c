import type { ApolloServerPlugin } from '@apollo/server';
import { metricsRegistry, type CallerContext } from '@keelson/service';
import { Counter } from 'prom-client';
import { answerWith, cleanData, queryKeyOf } from './keptAnswers';

/** Data of a query's answer when it had no errors (nothing else is shared). */
type Shared = Record<string, unknown> | undefined;

function coalescedCounter(): Counter {
  const registry = metricsRegistry();
  return (
    (registry.getSingleMetric('keelson_gateway_coalesced_total') as Counter | undefined) ??
    new Counter({
      name: 'keelson_gateway_coalesced_total',
      help: 'Client queries answered with the answer of an identical query (same text, operation, variables and caller) the gateway was executing when they arrived',
      registers: [registry],
    })
  );
}

/**
 * Identical queries in flight share one execution: a query with the text, operation name and
 * variables of one this gateway is executing for the same caller (kind, subject, token, scopes)
 * waits for that one's answer instead of executing its plan again. Only an answer without errors is
 * shared; otherwise each waiting query executes on its own. Read-your-writes: a query never joins an
 * execution that began before a mutation through this gateway answered (a count of answered
 * mutations is part of the key). It runs after parsing, validation and the scope checks, so every
 * request that shares passed them. With the entity cache, whose answers must be current from the
 * request's own start, only queries `shares` allows (by their key from `queryKeyOf`) share: those
 * whose last execution read nothing the cache keeps (`EntityCache.readsNothingCached`).
 */
export function coalescePlugin(options: { shares?: (query: string) => boolean } = {}): ApolloServerPlugin<CallerContext> {
  const { shares } = options;
  const executing = new Map<string, Promise<Shared>>();
  const coalesced = coalescedCounter();
  /** Mutations this gateway has answered: part of every key. */
  let mutationsAnswered = 0;
  return {
    async requestDidStart() {
      /** Set while this request leads: the key it executes under and how its followers are told. */
      let leading: { key: string; promise: Promise<Shared>; settle: (data: Shared) => void } | undefined;
      const finish = (data: Shared) => {
        if (!leading) return;
        if (executing.get(leading.key) === leading.promise) executing.delete(leading.key);
        leading.settle(data);
        leading = undefined;
      };
      return {
        async responseForOperation(request) {
          const query = queryKeyOf(request);
          if (query === undefined || (shares && !shares(query))) return null;
          const key = `${mutationsAnswered}\u0000${query}`;
          const leader = executing.get(key);
          if (leader) {
            const data = await leader;
            if (!data) return null;
            coalesced.inc();
            return answerWith(request, data);
          }
          let settle!: (data: Shared) => void;
          const promise = new Promise<Shared>((resolve) => (settle = resolve));
          leading = { key, promise, settle };
          executing.set(key, promise);
          return null;
        },
        async didEncounterErrors() {
          finish(undefined);
        },
        async willSendResponse(request) {
          if (request.operation?.operation === 'mutation') mutationsAnswered += 1;
          finish(cleanData(request.response));
        },
      };
    },
  };
}
