import {
  BARE_UUID_PROBE_ORDER,
  classifySessionRef,
  decodeEnc,
  encSessionId,
  formatSessionId,
  HARNESS_IDS,
  parseSessionId,
  requireSessionId,
} from './ids';

const UUID = '0b9f6a4e-3c2d-4e1f-8a7b-6c5d4e3f2a1b';

describe('SessionId', () => {
  it('knows exactly the seed\'s eight harness ids, in its order', () => {
    expect(HARNESS_IDS).toEqual(['claude-code', 'grok-build', 'kimi-code', 'hermes', 'codex', 'opencode', 'pi', 'qwen-code']);
  });

  it('splits on the first colon only: the native part may hold `:` and `/`', () => {
    expect(parseSessionId('hermes:a:b/c:d')).toEqual({ sessionId: 'hermes:a:b/c:d', harnessId: 'hermes', nativeId: 'a:b/c:d' });
    expect(parseSessionId(`claude-code:${UUID}`).nativeId).toBe(UUID);
    expect(formatSessionId('pi', UUID)).toBe(`pi:${UUID}`);
  });

  it.each([
    ['', /empty/],
    ['claude-code', /no colon/],
    [':x', /unknown harness/],
    ['vim:x', /unknown harness "vim"/],
    ['claude-code:', /native id .* is empty/],
    ['claude-code:a\nb', /control characters/],
    [`claude-code:${'x'.repeat(600)}`, /at most 512/],
  ])('rejects %j with BAD_USER_INPUT', (raw, message) => {
    expect(() => parseSessionId(raw)).toThrow(expect.objectContaining({ code: 'BAD_USER_INPUT', message: expect.stringMatching(message) }));
  });

  it('checks each harness\'s native shape before an id reaches a driver (no path is built from a raw id)', () => {
    expect(requireSessionId(`kimi-code:session_${UUID}`).nativeId).toBe(`session_${UUID}`);
    expect(requireSessionId('hermes:20250701_100000_ab12').harnessId).toBe('hermes');
    expect(requireSessionId('opencode:ses_dd59cd19effeyN2L5LshjL9e1i').harnessId).toBe('opencode');
    for (const bad of ['claude-code:../../etc/passwd', `codex:${UUID}/x`, `pi:${UUID.toUpperCase()}`, 'opencode:ses_a/b', `kimi-code:${UUID}`, 'hermes:a:b']) {
      expect(() => requireSessionId(bad)).toThrow(expect.objectContaining({ code: 'BAD_USER_INPUT' }));
    }
  });
});

describe('enc', () => {
  it('is the unpadded base64url of the UTF-8 SessionId, and decodes back', () => {
    for (const id of [`claude-code:${UUID}`, 'hermes:a:b/c', 'opencode:ses_ü√']) {
      const enc = encSessionId(id);
      expect(enc).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(enc).toBe(Buffer.from(id, 'utf8').toString('base64url'));
      expect(decodeEnc(enc).sessionId).toBe(id);
    }
  });

  it.each([
    ['', 'empty'],
    ['YQ==', 'padding'],
    ['Y+Q', 'outside'],
    ['a', 'impossible length'],
    ['YR', 'non-canonical'],
    [Buffer.from([0xff, 0x3a, 0x61]).toString('base64url'), 'invalid UTF-8'],
    [Buffer.from('hello').toString('base64url'), 'no colon'],
    [Buffer.from('vim:x').toString('base64url'), 'unknown harness'],
  ])('rejects %j (%s) with BAD_USER_INPUT', (enc, why) => {
    expect(() => decodeEnc(enc)).toThrow(expect.objectContaining({ code: 'BAD_USER_INPUT', message: expect.stringContaining(why) }));
  });
});

describe('bare-id probe rules', () => {
  it('probes a bare UUID across the UUID-shaped stores in seed order (claude, then grok, …)', () => {
    expect(BARE_UUID_PROBE_ORDER).toEqual(['claude-code', 'grok-build', 'codex', 'pi', 'qwen-code']);
    expect(classifySessionRef(UUID)).toEqual({ kind: 'bare-uuid', nativeId: UUID, probe: BARE_UUID_PROBE_ORDER });
  });

  it('never claims a bare kimi `session_<uuid>`: it must be sent canonical', () => {
    expect(() => classifySessionRef(`session_${UUID}`)).toThrow(expect.objectContaining({ code: 'BAD_USER_INPUT', message: expect.stringMatching(/must be sent canonical/) }));
    expect(classifySessionRef(`kimi-code:session_${UUID}`)).toMatchObject({ kind: 'canonical', parsed: { harnessId: 'kimi-code' } });
  });

  it('reads a legacy Claude transcript path as its claude-code SessionId', () => {
    expect(classifySessionRef(`/home/u/.claude/projects/-work-x/${UUID}.jsonl`)).toMatchObject({ kind: 'canonical', parsed: { sessionId: `claude-code:${UUID}` } });
  });

  it('takes any native part of a canonical id as given (seed 002: it may hold `:` and `/`); only its harness, length and control characters are checked', () => {
    for (const id of ['hermes:a:b/c', 'codex:a:b/c:d', 'claude-code:not-a-uuid']) {
      const [harnessId] = id.split(':');
      expect(classifySessionRef(id)).toEqual({ kind: 'canonical', parsed: { sessionId: id, harnessId, nativeId: id.slice(harnessId!.length + 1) } });
    }
    for (const bad of ['vim:a', 'codex:', 'codex:a\u0000b', `codex:${'x'.repeat(600)}`]) {
      expect(() => classifySessionRef(bad)).toThrow(expect.objectContaining({ code: 'BAD_USER_INPUT' }));
    }
  });

  it('rejects other bare ids', () => {
    expect(() => classifySessionRef('ses_dd59cd19effeyN2L5LshjL9e1i')).toThrow(expect.objectContaining({ code: 'BAD_USER_INPUT' }));
  });
});
