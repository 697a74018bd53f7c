/** One server-sent event: its `event:` name (when it has one) and its joined `data:` lines. */
export interface SseEvent {
  event?: string;
  data: string;
}

/**
 * Parses a `text/event-stream` body (the WHATWG rules: `\n`, `\r\n` or `\r` line ends, `:` comments,
 * one optional space after the colon, multi-line `data`, an event dispatched at each blank line).
 */
export async function* readSse(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event: string | undefined;
  let data: string[] = [];
  let sawData = false;

  const line = function* (text: string): Generator<SseEvent> {
    if (text === '') {
      if (sawData) yield { ...(event !== undefined ? { event } : {}), data: data.join('\n') };
      event = undefined;
      data = [];
      sawData = false;
      return;
    }
    if (text.startsWith(':')) return;
    const colon = text.indexOf(':');
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') {
      data.push(value);
      sawData = true;
    }
  };

  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    for (;;) {
      const at = buffer.search(/\r\n|\r|\n/);
      if (at === -1) break;
      // A lone `\r` at the end may be the first half of `\r\n`: wait for more.
      if (buffer[at] === '\r' && at === buffer.length - 1) break;
      const width = buffer.startsWith('\r\n', at) ? 2 : 1;
      const text = buffer.slice(0, at);
      buffer = buffer.slice(at + width);
      yield* line(text);
    }
  }
  buffer += decoder.decode();
  if (buffer.length > 0) yield* line(buffer.replace(/\r$/, ''));
  yield* line('');
}
