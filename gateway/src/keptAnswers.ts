import { HeaderMap, type GraphQLRequestContextResponseForOperation, type GraphQLResponse } from '@apollo/server';
import type { CallerContext } from '@keelson/service';
import { responseKey } from './entityCache';

/**
 * What the gateway's plugins that answer a query without executing it share (whole responses from
 * the entity cache, identical queries in flight): which requests they may answer, how the answer is
 * made, and which answers may be kept.
 */

/** Each request's key, worked out once for every plugin that asks (Apollo hands them one context). */
const keys = new WeakMap<object, string | undefined>();

/** The key of a query request from a caller (`responseKey`); undefined for anything else. */
export function queryKeyOf(request: GraphQLRequestContextResponseForOperation<CallerContext>): string | undefined {
  if (keys.has(request)) return keys.get(request);
  const caller = request.contextValue.caller;
  const key = request.operation.operation !== 'query' || !caller || request.source === undefined ? undefined : responseKey(request.source, request.request.operationName, request.request.variables, caller);
  keys.set(request, key);
  return key;
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
