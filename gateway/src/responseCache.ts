import { HeaderMap, type ApolloServerPlugin } from '@apollo/server';
import type { CallerContext } from '@keelson/service';
import { responseKey, type EntityCache } from './entityCache';

/**
 * Whole responses from the entity cache: a client query whose every fetch was cacheable keeps its
 * answer's data under its text, operation name, variables and caller, and the same query from the
 * same caller is answered with it — without executing its plan — while every fetch it was made of
 * is still current (`EntityCache.response`). It runs after parsing, validation and the scope
 * checks, so a kept response is only ever served to a request that passed them.
 */
export function responseCachePlugin(cache: EntityCache): ApolloServerPlugin<CallerContext> {
  return {
    async requestDidStart() {
      /** Set while this request executes a query whose response may be kept. */
      let key: string | undefined;
      return {
        async responseForOperation(request) {
          const caller = request.contextValue.caller;
          if (request.operation.operation !== 'query' || !caller || request.source === undefined) return null;
          const candidate = responseKey(request.source, request.request.operationName, request.request.variables, caller);
          const data = cache.response(candidate);
          if (data) {
            // As an answer from cached fetches: the overall policy is not cacheable.
            request.overallCachePolicy.restrict({ maxAge: 0 });
            return { http: { status: undefined, headers: new HeaderMap() }, body: { kind: 'single', singleResult: { data } } };
          }
          key = candidate;
          cache.beginResponse(request.contextValue);
          return null;
        },
        async willSendResponse(request) {
          if (key === undefined) return;
          const body = request.response.body;
          if (body.kind === 'single' && !body.singleResult.errors?.length && !body.singleResult.extensions && body.singleResult.data) {
            cache.keepResponse(request.contextValue, key, body.singleResult.data);
          }
        },
      };
    },
  };
}
