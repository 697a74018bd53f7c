// What every record*Histories script shares: the command line (--address, --only), a dev server when
// no address is given, and writing one workflow's history to temporal/histories/<name>.json.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { ensureTemporalCli, startDevServer } from '../src';

export interface RecordingTarget {
  /** The Temporal frontend: `--address host:port`, else a dev server started here. */
  address: string;
  /** `--only name,name`: the scenarios to record; absent: all. */
  wanted: (name: string) => boolean;
  /** Stops the dev server, if one was started. */
  stop: () => Promise<void>;
}

/** Reads the command line and, without `--address`, starts a dev server. */
export async function recordingTarget(argv: string[] = process.argv): Promise<RecordingTarget> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const addressFlag = argv.indexOf('--address');
  const server = addressFlag === -1 ? await startDevServer({ cli: await ensureTemporalCli({ log: console.log }), port: 0, uiPort: 0 }) : undefined;
  const onlyFlag = argv.indexOf('--only');
  const only = onlyFlag === -1 ? undefined : argv[onlyFlag + 1]!.split(',');
  return {
    address: server?.address ?? argv[addressFlag + 1]!,
    wanted: (name) => !only || only.includes(name),
    stop: async () => {
      await server?.stop();
    },
  };
}

type History = Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['fetchHistory']>>;

/** Writes one history as temporal/histories/<name>.json. */
export async function writeHistory(name: string, history: History): Promise<void> {
  const file = join(__dirname, '..', 'histories', `${name}.json`);
  await writeFile(file, `${JSON.stringify(JSON.parse(historyToJSON(history)), null, 2)}\n`);
  console.log(`recorded ${name} (${history.events?.length ?? 0} events) → ${file}`);
}

/** Runs each wanted scenario and records the history of the execution it names. */
export async function recordScenarios<H>(
  client: Client,
  harness: H,
  scenarios: Record<string, (h: H) => Promise<{ workflowId: string; runId?: string }>>,
  wanted: (name: string) => boolean,
): Promise<void> {
  for (const [name, scenario] of Object.entries(scenarios)) {
    if (!wanted(name)) continue;
    const { workflowId, runId } = await scenario(harness);
    await writeHistory(name, await client.workflow.getHandle(workflowId, runId).fetchHistory());
  }
}

/** Runs a script's main, setting a failing exit code on error. */
export function runRecording(main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}

/** A whole script for a harness that owns its client: records each wanted scenario, then stops. */
export function recordHarnessScenarios<H extends { client: Client; stop(): Promise<void> }>(
  open: (address: string) => Promise<H>,
  scenarios: Record<string, (h: H) => Promise<{ workflowId: string; runId?: string }>>,
): void {
  runRecording(async () => {
    const target = await recordingTarget();
    const h = await open(target.address);
    try {
      await recordScenarios(h.client, h, scenarios, target.wanted);
    } finally {
      await h.stop();
      await target.stop();
    }
  });
}
