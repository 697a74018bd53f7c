import { readSse } from './sse';

async function parse(pieces: string[]) {
  const bytes = new TextEncoder();
  const out = [];
  for await (const e of readSse((async function* () {
    for (const p of pieces) yield bytes.encode(p);
  })())) out.push(e);
  return out;
}

describe('readSse', () => {
  it('reads named events, multi-line data and comments, across any chunking and line ending', async () => {
    const text = ': ping\r\nevent: message_start\r\ndata: {"a":1}\r\n\r\ndata: line one\ndata: line two\n\nevent: x\rdata:tight\r\r';
    const whole = await parse([text]);
    expect(whole).toEqual([{ event: 'message_start', data: '{"a":1}' }, { data: 'line one\nline two' }, { event: 'x', data: 'tight' }]);
    // Byte by byte (a \r\n split across chunks must not yield an empty event).
    expect(await parse(text.split(''))).toEqual(whole);
  });

  it('dispatches a last event the stream did not end with a blank line, and skips events without data', async () => {
    expect(await parse(['event: lonely\n\ndata: [DONE]'])).toEqual([{ data: '[DONE]' }]);
  });
});
