import { createHash } from 'node:crypto';
import { MeshError } from '@keelson/schema';
import type { DataSource } from 'typeorm';
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
   * How long a claim whose request never finished (its process died between claiming and
   * recording the result) blocks the key; after that a repeat runs the mutation again. @default 120000
   */
  claimLeaseMs?: number;
  /** How long a repeat waits for the first request with the same key to finish. @default 15000 */
  waitMs?: number;
}

export interface IdempotentCall {
  /** The caller's subject: keys are per caller. */
  subject: string;
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
 * its claim, so a retry runs it again.
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
    const parsed = idempotencyKeySchema.safeParse(call.key);
    if (!parsed.success) throw new MeshError('BAD_USER_INPUT', `idempotencyKey: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    const ids = [call.subject, call.mutation, parsed.data];
    const hash = inputHash(call.input);
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
      if (row.input_hash !== hash) {
        throw new MeshError('CONFLICT', `idempotencyKey "${parsed.data}" was used for ${call.mutation} with a different input`);
      }
      if (row.result !== null) {
        const original = await codec.load(row.result);
        if (original === null) throw new MeshError('CONFLICT', `idempotencyKey "${parsed.data}": what ${call.mutation} made with it no longer exists`);
        return original;
      }
      if (Date.now() > deadline) {
        throw new MeshError('CONFLICT', `idempotencyKey "${parsed.data}": the first ${call.mutation} with it is still running; retry later`);
      }
      await sleep(100);
    }
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
