import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { silentLogger } from '@keelson/service';
import { startMesh, type RunningMesh } from '@keelson/stack';
import { findTemporalCli, startDevServer, TEMPORAL_CLI_VERSION } from '@keelson/temporal';
import { createTestDatabase } from '../test/support/db';

/** Receives one line of human-readable progress. */
export type Progress = (line: string) => void;

/** Progress on stderr (the report goes to stdout), each line stamped `[label   12.3 s]` from now. */
export function stderrProgress(label: string): Progress {
  const started = performance.now();
  return (line) => process.stderr.write(`[${label} ${((performance.now() - started) / 1000).toFixed(1).padStart(6)} s] ${line}\n`);
}

/**
 * A side-by-side bench's interleaved rounds and the length of each cell: the bench's own defaults,
 * or `KEELSON_BENCH_ROUNDS` / `KEELSON_BENCH_CELL_MS` (a quick look, or a longer, steadier run).
 */
export function benchRounds(defaults: { rounds: number; cellMs: number }): { rounds: number; cellMs: number } {
  return {
    rounds: Number(process.env.KEELSON_BENCH_ROUNDS ?? defaults.rounds),
    cellMs: Number(process.env.KEELSON_BENCH_CELL_MS ?? defaults.cellMs),
  };
}

/**
 * Undo steps, run newest first; every step runs even when an earlier one failed, and running the
 * whole list twice (a signal during teardown) runs it once.
 */
export class Teardown {
  private readonly steps: { name: string; undo: () => Promise<void> }[] = [];
  private running: Promise<void> | undefined;

  push(name: string, undo: () => Promise<void>): void {
    this.steps.push({ name, undo });
  }

  run(progress: Progress): Promise<void> {
    this.running ??= (async () => {
      for (const { name, undo } of this.steps.splice(0).reverse()) {
        progress(`teardown: ${name}`);
        await undo().catch((err: unknown) => progress(`teardown: ${name} failed: ${(err as Error).message ?? String(err)}`));
      }
    })();
    return this.running;
  }
}

export interface BenchStackOptions {
  /** Where the mesh's gateway runs (`npm start` runs it in a process of its own). @default 'in-process' */
  gateway?: 'in-process' | 'process';
  /** Settings on top of the environment (e.g. a gateway limit the bench needs raised). */
  env?: Record<string, string>;
}

/**
 * The benches measure the gateway's work per request with its entity cache off (a read repeated would
 * otherwise be answered from it); the cache has a workload of its own (`bench:peers`' mixed).
 */
export const UNCACHED_GATEWAY: NodeJS.ProcessEnv = { KEELSON_GATEWAY_CACHE: 'off' };

/**
 * The whole mesh booted in this process on free ports, against a throwaway database, its own
 * in-memory Temporal dev server and a temp workspace with its own git identity (as
 * test/support/mesh.ts does for the e2e tests). Everything started is registered on `teardown`
 * as soon as it exists, so a failure part-way leaves nothing behind.
 */
export async function startBenchStack(teardown: Teardown, progress: Progress, options: BenchStackOptions = {}): Promise<RunningMesh> {
  progress('Postgres: creating a throwaway database');
  const db = await createTestDatabase('keelson_bench');
  teardown.push(`drop database ${db.name}`, () => db.drop());

  const dir = await mkdtemp(join(tmpdir(), 'keelson-bench-'));
  teardown.push(`remove ${dir}`, () => rm(dir, { recursive: true, force: true }));
  const gitconfig = join(dir, 'gitconfig');
  await writeFile(gitconfig, '[user]\n\tname = Keelson Bench\n\temail = bench@keelson.invalid\n[init]\n\tdefaultBranch = main\n');

  const cli = await findTemporalCli();
  if (!cli) {
    throw new Error(
      `The bench needs the Temporal CLI (it embeds the dev server), found neither on PATH nor in ~/.keelson/bin. ` +
        `Run \`npm start\` once (it builds it) or go install github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}.`,
    );
  }
  progress(`Temporal: starting an in-memory dev server (${cli})`);
  const temporal = await startDevServer({ cli, port: 0, uiPort: 0 });
  teardown.push('stop the Temporal dev server', () => temporal.stop());

  const rawEnv: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: db.url,
    KEELSON_HOME: join(dir, 'home'),
    KEELSON_WORKSPACE: join(dir, 'workspace'),
    GIT_CONFIG_GLOBAL: gitconfig,
    GIT_CONFIG_NOSYSTEM: '1',
    TEMPORAL_ADDRESS: undefined,
    ...UNCACHED_GATEWAY,
    ...options.env,
  };
  const mesh = await startMesh({
    env: rawEnv,
    ephemeralPorts: true,
    gateway: options.gateway ?? 'in-process',
    temporal: { address: temporal.address, uiUrl: temporal.uiUrl },
    log: silentLogger(),
    progress: (line) => progress(`mesh: ${line}`),
  });
  teardown.push('stop the mesh', () => mesh.stop());
  return mesh;
}

/**
 * Runs a bench as its process: `main` builds the report, registering what it starts on `teardown`.
 * SIGINT / SIGTERM tear down and exit 130; a failure is printed and exits 1. The report goes to
 * stdout after teardown, so its last line is the last thing on the terminal.
 */
export function runBench(main: (teardown: Teardown) => Promise<string>, progress: Progress): void {
  const teardown = new Teardown();
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) return;
    interrupted = true;
    progress(`${signal}: cleaning up`);
    void teardown.run(progress).finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  void (async () => {
    let code = 0;
    let report = '';
    try {
      report = await main(teardown);
    } catch (err) {
      code = 1;
      // After a signal, whatever failed failed because teardown pulled the stack away.
      if (!interrupted) process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
    } finally {
      await teardown.run(progress);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
    progress(code === 0 ? 'done' : 'failed');
    process.stdout.write(report);
    process.exitCode = code;
  })();
}
