import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The fault suite's ledger: what clients were told (acknowledged ids, client-generated), what the
 * mesh stored, what each stream delivered, and what went wrong. Each scenario writes its row to
 * `KEELSON_FAULTS_LEDGER` (a folder the suite's global setup makes); the global teardown prints
 * the reconciliation table from every row.
 */
export interface ScenarioRow {
  scenario: string;
  /** Ids a client got an answer for. */
  acknowledged: number;
  /** Of those, the ones found stored afterwards (must equal `acknowledged`). */
  acknowledgedPersisted: number;
  /** Stored rows for this scenario's ids (may exceed `acknowledged`: a write whose answer was lost). */
  persisted: number;
  /** Events a stream delivered to a subscriber (-1 when the scenario watches no stream). */
  delivered: number;
  /** Events the log holds for the same stream (must equal `delivered`; -1 when none is watched). */
  streamPersisted: number;
  /** persisted ids minus distinct ones, plus side effects the scenario saw done twice. */
  duplicates: number;
  /** Workflows or runs that ended failed because of a fault. */
  failedByFaults: number;
  /** Processes left behind (dev servers, orphaned groups, index.lock). */
  orphans: number;
  /** Faults injected. */
  faults: number;
  /** ms from each fault to the mesh answering correctly again. */
  recoveryMs: number[];
  note?: string;
}

export class Ledger {
  private readonly acked = new Set<string>();
  readonly recoveries: number[] = [];
  faults = 0;

  constructor(readonly scenario: string) {}

  /** A client was told `id` exists (the mutation answered). */
  ack(id: string): void {
    this.acked.add(id);
  }

  get acknowledged(): ReadonlySet<string> {
    return this.acked;
  }

  /** A fault was injected at `at`; `recovered()` closes it. */
  fault(): { recovered(): number } {
    this.faults += 1;
    const at = Date.now();
    return {
      recovered: () => {
        const ms = Date.now() - at;
        this.recoveries.push(ms);
        return ms;
      },
    };
  }

  /** Reconciles against `persisted` (every stored id, duplicates kept) and writes the row. */
  write(persisted: readonly string[], extra: Partial<Pick<ScenarioRow, 'delivered' | 'streamPersisted' | 'duplicates' | 'failedByFaults' | 'orphans' | 'note'>> = {}): ScenarioRow {
    const stored = new Set(persisted);
    const row: ScenarioRow = {
      scenario: this.scenario,
      acknowledged: this.acked.size,
      acknowledgedPersisted: [...this.acked].filter((id) => stored.has(id)).length,
      persisted: persisted.length,
      delivered: extra.delivered ?? -1,
      streamPersisted: extra.streamPersisted ?? -1,
      duplicates: persisted.length - stored.size + (extra.duplicates ?? 0),
      failedByFaults: extra.failedByFaults ?? 0,
      orphans: extra.orphans ?? 0,
      faults: this.faults,
      recoveryMs: [...this.recoveries],
      ...(extra.note ? { note: extra.note } : {}),
    };
    const dir = process.env.KEELSON_FAULTS_LEDGER;
    if (dir) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `${this.scenario.replace(/[^a-z0-9]+/gi, '-')}.json`), JSON.stringify(row));
    }
    console.log(`[faults] ${this.scenario}: ${JSON.stringify(row)}`);
    return row;
  }
}

/** Whether a row reconciles: acknowledged ⊆ persisted, persisted = delivered, no duplicate, no failure, no orphan. */
export function reconciles(row: ScenarioRow): boolean {
  return row.acknowledgedPersisted === row.acknowledged && row.delivered === row.streamPersisted && row.duplicates === 0 && row.failedByFaults === 0 && row.orphans === 0;
}
