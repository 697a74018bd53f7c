import { HeaderMap, type GraphQLRequestContextResponseForOperation, type GraphQLResponse } from '@apollo/server';
import type { CallerContext } from '@keelson/service';
import { responseKey } from './entityCache';

/**
 * What the gateway's plugins that answer a query without executing it share (whole responses from
 * the entity cache, identical queries in flight): which requests they may answer, how the answer is
 * made, and which answers may be kept.
 */

/** The key of a query request from a caller (`responseKey`); undefined for anything else. */
export function queryKeyOf(request: GraphQLRequestContextResponseForOperation<CallerContext>): string | undefined {
  const caller = request.contextValue.caller;
  if (request.operation.operation !== 'query' || !caller || request.source === undefined) return undefined;
  return responseKey(request.source, request.request.operationName, request.request.variables, caller);
}

/** The response answering `request` with kept data; as it reached no subgraph for it, not cacheable over HTTP. */
export function answerWith(request: GraphQLRequestContextResponseForOperation<CallerContext>, data: Record<string, unknown>): GraphQLResponse {
  request.overallCachePolicy.restrict({ maxAge: 0 });
  return { http: { status: undefined, headers: new HeaderMap() }, body: { kind: 'single', singleResult: { data } } };
}

/** The data of an answer that may be kept or shared: one without errors or extensions. */
export function cleanData(response: GraphQLResponse): Record<string, unknown> | undefined {
  const body = response.body;
  if (body.kind !== 'single' || body.singleResult.errors?.length || body.singleResult.extensions || !body.singleResult.data) return undefined;
  return body.singleResult.data;
}
