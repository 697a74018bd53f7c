/** One server-sent event as a client sees it. */
export interface SseEvent {
  event?: string;
  data: string;
}

/**
 * Parses a `text/event-stream` body per the SSE spec: events end at a blank line, `data:` lines
 * join with newlines, one leading space after the colon is dropped, comments are ignored.
 */
export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  let event: string | undefined;
  let data: string[] = [];
  for (const line of text.split(/\r\n|\r|\n/)) {
    if (line === '') {
      if (data.length > 0) events.push({ ...(event !== undefined ? { event } : {}), data: data.join('\n') });
      event = undefined;
      data = [];
      continue;
    }
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  return events;
}

/** POSTs JSON the way the SDKs do. */
export function postJson(url: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body), signal });
}

/** POSTs and reads the whole event stream, asserting it is one. */
export async function postSse(url: string, body: unknown, headers: Record<string, string> = {}): Promise<SseEvent[]> {
  const res = await postJson(url, body, headers);
  if (res.status !== 200) throw new Error(`expected 200, got ${res.status}: ${await res.text()}`);
  const type = res.headers.get('content-type') ?? '';
  if (!type.startsWith('text/event-stream')) throw new Error(`expected an event stream, got ${type}`);
  return parseSse(await res.text());
}

/** The JSON payloads of events (skipping a `[DONE]` sentinel). */
export function payloads<T = Record<string, unknown>>(events: SseEvent[]): T[] {
  return events.filter((e) => e.data !== '[DONE]').map((e) => JSON.parse(e.data) as T);
}

/** Event names with runs of the same name collapsed to one: stable against how text is chunked. */
export function collapsed(names: Array<string | undefined>): Array<string | undefined> {
  return names.filter((n, i) => i === 0 || n !== names[i - 1]);
}
