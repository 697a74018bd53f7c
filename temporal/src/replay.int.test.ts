import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { workflowTypes } from '@keelson/schema';
import { quietTemporalRuntime } from '../../test/support/temporalServer';
import { workflowBundle } from './workflowBundle';

quietTemporalRuntime();

const historiesDir = join(__dirname, '..', 'histories');
const histories = readdirSync(historiesDir).filter((file) => file.endsWith('.json')).sort();

describe('recorded workflow histories', () => {
  let bundle: WorkflowBundleWithSourceMap;

  beforeAll(async () => {
    bundle = await workflowBundle();
  });

  it('include one for every workflow type the worker registers', () => {
    const types = Object.values(workflowTypes);
    expect(types.length).toBeGreaterThanOrEqual(11);
    expect(types.filter((type) => !histories.includes(`${type}.json`))).toEqual([]);
  });

  it('include the run and op workflows\' continue-as-new and cancel paths', () => {
    expect(histories).toEqual(
      expect.arrayContaining([
        'echoWorkflow.json',
        'dagRun.json',
        'dagRun-continuedAsNew.json',
        'dagRun-continued.json',
        'dagRun-cancelled.json',
        'durableOp.json',
        'durableOp-steered.json',
        'durableOp-continuedAsNew.json',
        'durableOp-continued.json',
        'opWork.json',
        'swarm.json',
        'swarm-stopped.json',
        'swarm-continuedAsNew.json',
        'sessionSteer.json',
      ]),
    );
  });

  it.each(histories)('%s replays without nondeterminism against the current workflow code', async (file) => {
    const history: unknown = JSON.parse(readFileSync(join(historiesDir, file), 'utf8'));

    await Worker.runReplayHistory({ workflowBundle: bundle }, history, file.replace(/\.json$/, ''));
  });
});
