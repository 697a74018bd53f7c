import { createHash, randomBytes } from 'node:crypto';

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';

/**
 * Monotonic, lower-cased ULIDs: 10 characters of milliseconds, 16 of randomness, incremented within
 * one millisecond (and whenever the clock would go backwards), so each is greater than the last as a
 * string. ClickClack's cursors are `cur_` plus one of these (SWARM.md §1.4).
 */
export class UlidFactory {
  private last = '';

  constructor(private readonly now: () => number = Date.now) {}

  /** Never returns a value at or below `floor` (the newest one a restarted store already holds). */
  next(floor = ''): string {
    let candidate = encodeTime(this.now()) + encodeRandom();
    const after = this.last > floor ? this.last : floor;
    if (candidate <= after) candidate = increment(after);
    this.last = candidate;
    return candidate;
  }
}

function encodeTime(ms: number): string {
  let out = '';
  let t = Math.max(0, Math.floor(ms));
  for (let i = 0; i < 10; i++) {
    out = CROCKFORD[t % 32] + out;
    t = Math.floor(t / 32);
  }
  return out;
}

function encodeRandom(): string {
  const bytes = randomBytes(16);
  let out = '';
  for (let i = 0; i < 16; i++) out += CROCKFORD[bytes[i]! % 32];
  return out;
}

/** The next ULID in string order (carrying into the time part when the randomness is exhausted). */
function increment(id: string): string {
  const chars = id.split('');
  for (let i = chars.length - 1; i >= 0; i--) {
    const v = CROCKFORD.indexOf(chars[i]!);
    if (v < 31) {
      chars[i] = CROCKFORD[v + 1]!;
      return chars.join('');
    }
    chars[i] = CROCKFORD[0]!;
  }
  throw new Error('ULID space exhausted');
}

/** `<prefix>_<ulid>`, the shape of every ClickClack id (`usr_`, `msg_`, `evt_`, …). */
export function prefixedId(factory: UlidFactory, prefix: string): string {
  return `${prefix}_${factory.next()}`;
}

/** A bearer secret: the prefix (`ccb_`, `sst_`, `mgt_`) and 32 random bytes as hex. */
export function secret(prefix: string): string {
  return `${prefix}_${randomBytes(32).toString('hex')}`;
}

/** Secrets are kept only as their SHA-256, so the data directory holds no usable credential. */
export function hashSecret(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}
