import { createHash } from 'node:crypto';
import { callerKey, MeshError, type Caller } from '@keelson/schema';
import type { DataSource, EntityManager } from 'typeorm';
import { z } from 'zod';

/** An idempotency key: 1–200 printable characters, chosen by the client (a UUID is a good one). */
export const idempotencyKeySchema = z
  .string()
  .min(1, 'must be 1 to 200 characters')
  .max(200, 'must be 1 to 200 characters')
  .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces');

/** The description of every create/start mutation's `idempotencyKey` argument. */
export const IDEMPOTENCY_KEY =
  'Optional, 1–200 printable characters chosen by the client (a UUID): a repeat with the same key and input returns the original result; the same key with a different input is CONFLICT. Keys are per caller.';

/** How a mutation's result is kept under its key, and brought back for a repeat. */
export interface ResultCodec<T> {
  /** What to store (JSON): an id for a created row, or the whole answer when it is small and final. */
  save(result: T): unknown;
  /** The original result again (a created row is read as it is now); null when it is gone. */
  load(saved: unknown): Promise<T | null>;
}

/** A codec for results that are rows with an `id`, reloaded by it. */
export function byId<T extends { id: string }>(load: (id: string) => Promise<T | null>): ResultCodec<T> {
  return {
    save: (result) => ({ id: result.id }),
    load: (saved) => load(z.object({ id: z.string() }).parse(saved).id),
  };
}

/** A codec for small answers stored whole (JSON round trip; dates come back as ISO strings unless `revive` restores them). */
export function whole<T>(revive: (json: unknown) => T = (json) => json as T): ResultCodec<T> {
  return { save: (result) => JSON.parse(JSON.stringify(result)) as unknown, load: async (saved) => revive(saved) };
}

/** JSON with object keys sorted at every level, so equal inputs hash alike whatever their key order. */
function canonical(value: unknown): string {
  if (value === undefined) return 'null';
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
}

/** The hash an input is compared by: sha256 of its canonical JSON. */
export function inputHash(input: unknown): string {
  return createHash('sha256').update(canonical(input)).digest('hex');
}

export interface IdempotencyOptions {
  /**
   * How long a claim of {@link IdempotencyKeys.run} whose request never finished (its process died
   * between claiming and recording the result) blocks the key; after that a repeat runs the mutation
   * again. {@link IdempotencyKeys.runInTransaction} needs none: its claim dies with the transaction.
   * @default 120000
   */
  claimLeaseMs?: number;
  /** How long a repeat waits for the first request with the same key to finish. @default 15000 */
  waitMs?: number;
}

export interface IdempotentCall {
  /** Who calls: keys are per caller, by its stable key (`callerKey`: a token's id, never a display name). */
  caller: Pick<Caller, 'kind' | 'subject' | 'tokenId'>;
  /** The mutation's field name. */
  mutation: string;
  /** The client's key; without one the mutation just runs. */
  key: string | null | undefined;
  /** The mutation's input (every argument but the key). */
  input: unknown;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The idempotency keys of the create/start mutations (one implementation for every subgraph, on
 * the shared `idempotency_keys` table). The first request with a key claims it, runs the mutation
 * and records the result; a repeat with the same input gets that result (after waiting for the
 * first to finish), a repeat with a different input is CONFLICT. A mutation that fails releases
 * its claim, so a retry runs it again. A mutation whose writes are one transaction claims in that
 * transaction ({@link IdempotencyKeys.runInTransaction}), so a crash leaves no claim behind.
 */
export class IdempotencyKeys {
  private readonly claimLeaseMs: number;
  private readonly waitMs: number;

  constructor(
    private readonly dataSource: DataSource,
    opts: IdempotencyOptions = {},
  ) {
    this.claimLeaseMs = opts.claimLeaseMs ?? 120_000;
    this.waitMs = opts.waitMs ?? 15_000;
  }

  async run<T>(call: IdempotentCall, codec: ResultCodec<T>, mutate: () => Promise<T>): Promise<T> {
    if (call.key == null) return mutate();
    const { ids, hash, key } = keyOf(call);
    const deadline = Date.now() + this.waitMs;
    for (;;) {
      const claimed: unknown[] = await this.dataSource.query(
        `INSERT INTO idempotency_keys (subject, mutation, key, input_hash) VALUES ($1, $2, $3, $4)
         ON CONFLICT (subject, mutation, key) DO UPDATE SET claimed_at = clock_timestamp()
           WHERE idempotency_keys.result IS NULL AND idempotency_keys.input_hash = EXCLUDED.input_hash
             AND idempotency_keys.claimed_at < clock_timestamp() - make_interval(secs => $5::double precision / 1000)
         RETURNING 1`,
        [...ids, hash, this.claimLeaseMs],
      );
      if (claimed.length > 0) return this.runClaimed(ids, codec, mutate);
      const rows: { input_hash: string; result: unknown }[] = await this.dataSource.query(
        'SELECT input_hash, result FROM idempotency_keys WHERE subject = $1 AND mutation = $2 AND key = $3',
        ids,
      );
      const row = rows[0];
      if (!row) continue; // released meanwhile: claim it
      if (row.input_hash !== hash) throw differentInput(key, call.mutation);
      if (row.result !== null) return original(key, call.mutation, codec, row.result);
      if (Date.now() > deadline) throw stillRunning(key, call.mutation);
      await sleep(100);
    }
  }

  /**
   * For a mutation whose writes are one transaction (`mutate` does them all with `m`): the claim,
   * those writes and the result commit together or not at all. A repeat while the first runs waits
   * on the claim's row (up to `waitMs`); a crash anywhere before the commit rolls the claim back with
   * the writes, so the key is free at once — no lease to wait out. Without a key `mutate` runs in a
   * transaction of its own.
   */
  async runInTransaction<T>(call: IdempotentCall, codec: ResultCodec<T>, mutate: (m: EntityManager) => Promise<T>): Promise<T> {
    if (call.key == null) return this.dataSource.transaction(mutate);
    const { ids, hash, key } = keyOf(call);
    const outcome = await this.dataSource.transaction(async (m): Promise<{ made: T } | { saved: { input_hash: string; result: unknown } | undefined }> => {
      // Bounds only the wait for a first request's claim; the mutation's own statements wait as usual.
      await m.query("SELECT set_config('lock_timeout', $1, true)", [`${this.waitMs}ms`]);
      let claimed: unknown[];
      try {
        // Takes the key, or a committed claim without a result (left by `run` in a process that died).
        claimed = await m.query(
          `INSERT INTO idempotency_keys (subject, mutation, key, input_hash) VALUES ($1, $2, $3, $4)
           ON CONFLICT (subject, mutation, key) DO UPDATE SET claimed_at = clock_timestamp()
             WHERE idempotency_keys.result IS NULL AND idempotency_keys.input_hash = EXCLUDED.input_hash
           RETURNING 1`,
          [...ids, hash],
        );
      } catch (err) {
        if (pgCode(err) === LOCK_NOT_AVAILABLE || pgCode(err) === QUERY_CANCELED) throw stillRunning(key, call.mutation);
        throw err;
      }
      await m.query("SELECT set_config('lock_timeout', '0', true)");
      if (claimed.length === 0) {
        const rows: { input_hash: string; result: unknown }[] = await m.query('SELECT input_hash, result FROM idempotency_keys WHERE subject = $1 AND mutation = $2 AND key = $3', ids);
        return { saved: rows[0] };
      }
      const made = await mutate(m);
      await m.query('UPDATE idempotency_keys SET result = $4::jsonb, completed_at = clock_timestamp() WHERE subject = $1 AND mutation = $2 AND key = $3', [
        ...ids,
        JSON.stringify(codec.save(made)),
      ]);
      return { made };
    });
    if ('made' in outcome) return outcome.made;
    const row = outcome.saved;
    // Only a result-less claim of another input stays behind a committed conflict: a different input.
    if (!row || row.input_hash !== hash) throw differentInput(key, call.mutation);
    if (row.result === null) throw stillRunning(key, call.mutation);
    return original(key, call.mutation, codec, row.result);
  }

  private async runClaimed<T>(ids: string[], codec: ResultCodec<T>, mutate: () => Promise<T>): Promise<T> {
    let result: T;
    try {
      result = await mutate();
    } catch (err) {
      // Nothing was made (or what was half made is the mutation's to undo): a retry may try again.
      await this.dataSource
        .query('DELETE FROM idempotency_keys WHERE subject = $1 AND mutation = $2 AND key = $3 AND result IS NULL', ids)
        .catch(() => undefined);
      throw err;
    }
    await this.dataSource.query(
      'UPDATE idempotency_keys SET result = $4::jsonb, completed_at = clock_timestamp() WHERE subject = $1 AND mutation = $2 AND key = $3',
      [...ids, JSON.stringify(codec.save(result))],
    );
    return result;
  }
}

/** Postgres lock_not_available (a `lock_timeout` ran out) and query_canceled (a `statement_timeout`). */
const LOCK_NOT_AVAILABLE = '55P03';
const QUERY_CANCELED = '57014';

function pgCode(err: unknown): string | undefined {
  const e = err as { code?: unknown; driverError?: { code?: unknown } };
  const code = e?.driverError?.code ?? e?.code;
  return typeof code === 'string' ? code : undefined;
}

function keyOf(call: IdempotentCall): { ids: string[]; hash: string; key: string } {
  const parsed = idempotencyKeySchema.safeParse(call.key);
  if (!parsed.success) throw new MeshError('BAD_USER_INPUT', `idempotencyKey: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return { ids: [callerKey(call.caller), call.mutation, parsed.data], hash: inputHash(call.input), key: parsed.data };
}

function differentInput(key: string, mutation: string): MeshError {
  return new MeshError('CONFLICT', `idempotencyKey "${key}" was used for ${mutation} with a different input`);
}

function stillRunning(key: string, mutation: string): MeshError {
  return new MeshError('CONFLICT', `idempotencyKey "${key}": the first ${mutation} with it is still running; retry later`);
}

async function original<T>(key: string, mutation: string, codec: ResultCodec<T>, saved: unknown): Promise<T> {
  const found = await codec.load(saved);
  if (found === null) throw new MeshError('CONFLICT', `idempotencyKey "${key}": what ${mutation} made with it no longer exists`);
  return found;
}
