// Records the event histories of the `swarm` workflow into temporal/histories/<name>.json, for
// replay.int.test.ts: a lead and two workers to DONE, a swarm stopped mid-turn, and a swarm that
// continues as new (its first execution). Needs Postgres (as the tests do) and runs the managed
// stand-in. Re-record only on purpose, after a deliberate change to the workflow.
//   node -r ./scripts/register.js temporal/scripts/recordSwarmHistories.ts [--address host:port] [--only name,name]
import { workflowTypes } from '@keelson/schema';
import { threeAgentRules } from '../../test/support/swarmScript';
import { ADDRESS_ENV } from '../../test/support/temporalServer';
import { swarmStopSignal } from '../src/workflows/swarmMessages';
import { SwarmHarness } from '../test/swarmHarness';
import { recordHarnessScenarios } from './recording';

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

recordHarnessScenarios((address) => {
  process.env[ADDRESS_ENV] = address;
  return SwarmHarness.start({ rules: [] });
}, scenarios);
