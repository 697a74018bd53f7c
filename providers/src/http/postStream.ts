import { ProviderError, type CallStopReason, type ModelCallEvent } from '../types';
import { readSse, type SseEvent } from './sse';

/** The longest error body read from a failed response. */
const ERROR_BODY_CHARS = 2000;

/** The API's own error message from a JSON error body (`{ error: { message } }` and its variants). */
export function apiErrorMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    if (typeof body.error === 'string') return body.error;
    if (typeof body.error?.message === 'string') return body.error.message;
    if (typeof body.message === 'string') return body.message;
  } catch {
    // Not JSON: the text itself.
  }
  return text.trim().slice(0, ERROR_BODY_CHARS) || 'no error body';
}

/**
 * POSTs a JSON body and yields the response's server-sent events. A non-2xx answer rejects with a
 * {@link ProviderError} carrying the status and the API's message; an unreachable endpoint with one
 * naming the URL; an abort with the signal's reason (so the caller can tell a timeout from a cancel).
 */
export async function* postForEvents(
  label: string,
  url: string,
  headers: Record<string, string>,
  body: unknown,
  signal: AbortSignal,
): AsyncGenerator<SseEvent> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
      body: JSON.stringify(body),
      signal,
    });
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new ProviderError(`${label}: cannot reach ${url}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
  }
  if (!res.ok) {
    const text = await res.text().catch(() => '');
    throw new ProviderError(`${label} answered HTTP ${res.status}: ${apiErrorMessage(text)}`, res.status);
  }
  if (!res.body) throw new ProviderError(`${label} answered HTTP ${res.status} with no body`, res.status);
  try {
    yield* readSse(res.body as unknown as AsyncIterable<Uint8Array>);
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    throw new ProviderError(`${label}: the stream broke: ${(err as Error).message}`);
  }
}

/** Parses one event's JSON data, naming the provider and the event when it is not JSON. */
export function eventJson<T>(label: string, event: SseEvent): T {
  try {
    return JSON.parse(event.data) as T;
  } catch {
    throw new ProviderError(`${label}: a stream event${event.event ? ` (${event.event})` : ''} is not JSON: ${event.data.slice(0, 200)}`);
  }
}

/** Tool arguments as the model streamed them: the parsed object, or the raw text when it is not JSON. */
export function parseToolInput(raw: string): unknown {
  if (raw.trim() === '') return {};
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

type EndEvent = Extract<ModelCallEvent, { type: 'end' }>;

/** The settled call: a call that ended normally but asked for tools stopped for `tool_use`, whatever the wire said. */
export function endEvent(stopReason: CallStopReason, call: Omit<EndEvent, 'type' | 'stopReason' | 'model'>, model: string | undefined): EndEvent {
  return {
    type: 'end',
    stopReason: stopReason === 'end' && call.toolCalls.length > 0 ? 'tool_use' : stopReason,
    ...call,
    ...(model ? { model } : {}),
  };
}
