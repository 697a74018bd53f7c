import { connectClient } from '@keelson/temporal';
import type { Client } from '@temporalio/client';
import { gqlData } from './support/client';
import { startTestMesh, type TestMesh } from './support/mesh';
import { startWorkflow, waitForRun } from './support/runs';
import { quietTemporalRuntime } from './support/temporalServer';

quietTemporalRuntime();

// What an operator reads in the Temporal UI about a run, read back through Temporal's own API: the
// run's one-line summary and its details (set when the workflow starts), each activity's summary
// naming its node, the workflow's current details (which nodes run, which gate waits), the memo.

describe('a run as the Temporal UI shows it', () => {
  let mesh: TestMesh;
  let client: Client;
  beforeAll(async () => {
    mesh = await startTestMesh();
    client = await connectClient({ address: mesh.temporal.address, namespace: mesh.temporal.namespace });
  });
  afterAll(async () => {
    await client?.connection.close();
    await mesh?.teardown();
  });

  it('has a summary, details, node-named activities, current details at its gate and a readable memo', async () => {
    const { createProject } = await gqlData<{ createProject: { id: string } }>(mesh.gatewayUrl, 'mutation { createProject(input: { name: "ui-check" }) { id } }');
    const started = await startWorkflow(mesh.gatewayUrl, 'project-check', { projectId: createProject.id });
    await waitForRun(mesh.gatewayUrl, started.id, (r) => r.status === 'PAUSED', 60_000);
    const handle = client.workflow.getHandle(started.temporalWorkflowId);

    const description = await handle.describe();
    expect(await description.staticSummary()).toBe(`project-check in ui-check · run ${started.id.slice(0, 8)}`);
    const details = (await description.staticDetails())!;
    expect(details).toContain(`- run: \`${started.id}\` (launch 1)`);
    expect(details).toContain('- project: ui-check');
    expect(details).toMatch(/- started by: token:/);
    expect(details).toContain(`GraphQL: \`{ run(id: "${started.id}")`);
    expect(description.memo).toMatchObject({ runId: started.id, launch: 1, workflowName: 'project-check', project: 'ui-check', startedBy: expect.stringMatching(/^token:/) });

    // Current details: the gate that waits, nothing running.
    const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
    expect(metadata.currentDetails).toMatch(/^\*\*Run\*\* `[0-9a-f-]+`, launch 1: 3 of 5 nodes done\n- running: nothing\n- waiting for an answer at: `review` \(pause `[^`]+`\) \(respondToRun\)$/);

    // Every activity names the node it runs.
    const summaries: string[] = [];
    for (const event of (await handle.fetchHistory()).events ?? []) {
      const data = event.activityTaskScheduledEventAttributes ? event.userMetadata?.summary?.data : undefined;
      if (data) summaries.push(JSON.parse(Buffer.from(data).toString('utf8')) as string);
    }
    expect(summaries).toEqual(expect.arrayContaining(['status: bash', 'inventory: bash', 'report: script']));
  });
});
