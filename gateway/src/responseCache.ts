import type { ApolloServerPlugin } from '@apollo/server';
import type { CallerContext } from '@keelson/service';
import type { EntityCache } from './entityCache';
import { answerWith, cleanData, queryKeyOf } from './keptAnswers';

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
          const candidate = queryKeyOf(request);
          if (candidate === undefined) return null;
          const data = cache.response(candidate);
          if (data) return answerWith(request, data);
          key = candidate;
          cache.beginResponse(request.contextValue);
          return null;
        },
        async willSendResponse(request) {
          if (key === undefined) return;
          const data = cleanData(request.response);
          if (data) cache.keepResponse(request.contextValue, key, data);
        },
      };
    },
  };
}
