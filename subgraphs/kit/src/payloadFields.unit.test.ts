import { payloadOrNull } from './payloadFields';

describe('payloadOrNull', () => {
  it('keeps each named field the payload has, falsy values included, and reads a missing or undefined one as null', () => {
    const payload: { nodeId?: string; attempt?: number; exitCode?: number; error?: string; pauseId?: string } = { nodeId: 'a', attempt: 0, exitCode: undefined, error: '' };
    expect(payloadOrNull(payload, ['nodeId', 'attempt', 'exitCode', 'error', 'pauseId'])).toEqual({ nodeId: 'a', attempt: 0, exitCode: null, error: '', pauseId: null });
  });

  it('names only the fields asked for', () => {
    expect(Object.keys(payloadOrNull({ line: 'x', note: 'y' }, ['line']))).toEqual(['line']);
  });
});
