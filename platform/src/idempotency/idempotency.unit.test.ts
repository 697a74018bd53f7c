import { createHash } from 'node:crypto';
import { byId, IDEMPOTENCY_KEY, idempotencyKeySchema, inputHash, whole } from './idempotency';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('inputHash', () => {
  it('is the sha256 of the canonical JSON: keys sorted at every level, no spaces', () => {
    expect(inputHash({ b: 1, a: { d: [1, 'x'], c: true } })).toBe(sha256('{"a":{"c":true,"d":[1,"x"]},"b":1}'));
    expect(inputHash({ b: 1, a: 2 })).toBe(inputHash({ a: 2, b: 1 }));
  });

  it.each([
    [undefined, 'null'],
    [null, 'null'],
    [0, '0'],
    ['s', '"s"'],
    [false, 'false'],
    [[], '[]'],
    [{}, '{}'],
    [[undefined, null], '[null,null]'],
    [{ a: undefined, b: null }, '{"b":null}'],
    [new Date('2026-01-02T03:04:05.000Z'), '"2026-01-02T03:04:05.000Z"'],
    [{ at: new Date(0) }, '{"at":"1970-01-01T00:00:00.000Z"}'],
    [{ B: 1, a: 2, _: 3, aa: 4 }, '{"B":1,"_":3,"a":2,"aa":4}'],
    [[{ y: 1, x: 2 }], '[{"x":2,"y":1}]'],
  ])('hashes %p as %s', (input, json) => {
    expect(inputHash(input)).toBe(sha256(json));
  });

  it('tells apart inputs that differ anywhere, array order included', () => {
    expect(inputHash([1, 2])).not.toBe(inputHash([2, 1]));
    expect(inputHash({ a: 1 })).not.toBe(inputHash({ a: '1' }));
    expect(inputHash({ a: { b: 1 } })).not.toBe(inputHash({ a: { b: 2 } }));
  });

  it('writes a function (which JSON cannot hold) as null', () => {
    expect(inputHash(() => 1)).toBe(sha256('null'));
  });
});

describe('idempotencyKeySchema', () => {
  it.each(['a', '!', '~', 'x'.repeat(200), '6f1c0b7e-3f0a-4a8e-9c1d-2b3e4f5a6b7c'])('accepts %j', (key) => {
    expect(idempotencyKeySchema.parse(key)).toBe(key);
  });

  it.each([
    ['', 'must be 1 to 200 characters'],
    ['x'.repeat(201), 'must be 1 to 200 characters'],
    ['a b', 'must be printable ASCII without spaces'],
    ['tab\there', 'must be printable ASCII without spaces'],
    ['é', 'must be printable ASCII without spaces'],
    ['\x7f', 'must be printable ASCII without spaces'],
    [' lead', 'must be printable ASCII without spaces'],
    ['trail ', 'must be printable ASCII without spaces'],
  ])('refuses %j: %s', (key, message) => {
    const parsed = idempotencyKeySchema.safeParse(key);
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toBe(message);
  });

  it('is described to clients as per caller, with CONFLICT for another input', () => {
    expect(IDEMPOTENCY_KEY).toContain('1–200 printable characters');
    expect(IDEMPOTENCY_KEY).toContain('CONFLICT');
    expect(IDEMPOTENCY_KEY).toContain('per caller');
  });
});

describe('result codecs', () => {
  it('byId keeps only the id and reloads the row by it', async () => {
    const asked: string[] = [];
    const codec = byId(async (id) => {
      asked.push(id);
      return id === 'r1' ? { id, name: 'now' } : null;
    });
    expect(codec.save({ id: 'r1', name: 'then' } as { id: string; name: string })).toEqual({ id: 'r1' });
    await expect(codec.load({ id: 'r1' })).resolves.toEqual({ id: 'r1', name: 'now' });
    await expect(codec.load({ id: 'gone' })).resolves.toBeNull();
    expect(asked).toEqual(['r1', 'gone']);
    expect(() => codec.load({ id: 1 })).toThrow('expected string');
  });

  it('whole stores a JSON copy and brings it back through revive', async () => {
    const at = new Date('2026-01-02T03:04:05.000Z');
    const plain = whole<{ at: Date | string; n: number }>();
    const saved = plain.save({ at, n: 1 });
    expect(saved).toEqual({ at: '2026-01-02T03:04:05.000Z', n: 1 });
    await expect(plain.load(saved)).resolves.toEqual({ at: '2026-01-02T03:04:05.000Z', n: 1 });
    const revived = whole((json) => ({ ...(json as { at: string }), at: new Date((json as { at: string }).at) }));
    await expect(revived.load(saved)).resolves.toEqual({ at, n: 1 });
  });
});
