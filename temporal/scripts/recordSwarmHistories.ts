// Records the event histories of the `swarm` workflow into temporal/histories/<name>.json, for
// replay.int.test.ts: a lead and two workers to DONE, a swarm stopped mid-turn, and a swarm that
// continues as new (its first execution). Needs Postgres (as the tests do) and runs the managed
// stand-in. Re-record only on purpose, after a deliberate change to the workflow.
//   node -r ./scripts/register.js temporal/scripts/recordSwarmHistories.ts [--address host:port] [--only name,name]
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { workflowTypes } from '@keelson/schema';
import { threeAgentRules } from '../../test/support/swarmScript';
import { ADDRESS_ENV } from '../../test/support/temporalServer';
import { ensureTemporalCli, startDevServer } from '../src';
import { swarmStopSignal } from '../src/workflows/swarmMessages';
import { SwarmHarness } from '../test/swarmHarness';

const TASK = { task: 'Check parts A and B of the plan.', agents: [{ name: 'alice', role: 'checks part A' }, { name: 'bob', role: 'checks part B' }] };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Scenario = (h: SwarmHarness) => Promise<{ workflowId: string; runId?: string }>;

const scenarios: Record<string, Scenario> = {
  [workflowTypes.swarm]: async (h) => {
    h.model.setRules(threeAgentRules());
    const { swarmId, handle } = await h.launch(TASK);
    await h.waitFor(swarmId, (s) => s.status !== 'RUNNING');
    await handle.result();
    return { workflowId: handle.workflowId };
  },
  [`${workflowTypes.swarm}-stopped`]: async (h) => {
    h.model.setRules(threeAgentRules({ workerDelayMs: 60_000 }));
    const { swarmId, handle } = await h.launch(TASK);
    while (!(await h.events(swarmId)).some((e) => e.type === 'TURN_STARTED' && e.payload.agentId === 'alice')) await sleep(100);
    await handle.signal(swarmStopSignal, { reason: 'recorded stop' });
    await handle.result();
    return { workflowId: handle.workflowId };
  },
  [`${workflowTypes.swarm}-continuedAsNew`]: async (h) => {
    h.model.setRules(threeAgentRules());
    const { swarmId, handle, firstRunId } = await h.launch(TASK, { continueAsNewAfterEvents: 60 });
    await h.waitFor(swarmId, (s) => s.status !== 'RUNNING');
    return { workflowId: handle.workflowId, runId: firstRunId };
  },
};

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const addressFlag = process.argv.indexOf('--address');
  const server = addressFlag === -1 ? await startDevServer({ cli: await ensureTemporalCli({ log: console.log }), port: 0, uiPort: 0 }) : undefined;
  process.env[ADDRESS_ENV] = server?.address ?? process.argv[addressFlag + 1]!;
  const onlyFlag = process.argv.indexOf('--only');
  const only = onlyFlag === -1 ? undefined : process.argv[onlyFlag + 1]!.split(',');
  const h = await SwarmHarness.start({ rules: [] });
  try {
    for (const [name, scenario] of Object.entries(scenarios)) {
      if (only && !only.includes(name)) continue;
      const { workflowId, runId } = await scenario(h);
      const history = await h.client.workflow.getHandle(workflowId, runId).fetchHistory();
      const file = join(__dirname, '..', 'histories', `${name}.json`);
      await writeFile(file, `${JSON.stringify(JSON.parse(historyToJSON(history)), null, 2)}\n`);
      console.log(`recorded ${name} (${history.events?.length ?? 0} events) → ${file}`);
    }
  } finally {
    await h.stop();
    await server?.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
