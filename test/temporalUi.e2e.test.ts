import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectClient } from '@keelson/temporal';
import { chromium } from 'playwright-core';
import type { Client } from '@temporalio/client';
import { gqlData } from './support/client';
import { startTestMesh, type TestMesh } from './support/mesh';
import { startWorkflow, waitForRun } from './support/runs';
import { quietTemporalRuntime } from './support/temporalServer';

quietTemporalRuntime();

/** Debian's Chromium (`apt-get install chromium`, .ci/run does). */
const CHROMIUM = process.env.KEELSON_TEST_CHROMIUM ?? '/usr/bin/chromium';
/**
 * Where the picture of a paused run in the Temporal UI goes: a temp dir, so `npm test` leaves the
 * tree as it found it; `npm run docs:pictures` points KEELSON_PICTURES_DIR at docs/ for the README's.
 */
const PICTURES = process.env.KEELSON_PICTURES_DIR || join(tmpdir(), `keelson-pictures-${process.pid}`);

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
    expect(metadata.currentDetails).toMatch(/^\*\*Run\*\* `[0-9a-f-]+`, launch 1: 3 of 5 nodes done\n\n- running: nothing\n- waiting for an answer at: `review` \(pause `[^`]+`\) — “Read \$ARTIFACTS\\_DIR\/report\.md\. Answer "approve" to archive it, or give feedback to stop here\.” \(respondToRun\)$/);

    // Every activity names the node it runs.
    const summaries: string[] = [];
    for (const event of (await handle.fetchHistory()).events ?? []) {
      const data = event.activityTaskScheduledEventAttributes ? event.userMetadata?.summary?.data : undefined;
      if (data) summaries.push(JSON.parse(Buffer.from(data).toString('utf8')) as string);
    }
    expect(summaries).toEqual(expect.arrayContaining(['status: bash', 'inventory: bash', 'report: script']));
  });

  it('shows a paused run in the Temporal UI itself: its summary with the project, and the gate it waits at, without opening its history', async () => {
    const uiUrl = mesh.temporal.uiUrl;
    if (!uiUrl) throw new Error('the test Temporal server serves no UI (KEELSON_TEST_TEMPORAL_UI_URL unset)');
    const { createProject } = await gqlData<{ createProject: { id: string } }>(mesh.gatewayUrl, 'mutation { createProject(input: { name: "payments-api" }) { id } }');
    const started = await startWorkflow(mesh.gatewayUrl, 'project-check', { projectId: createProject.id });
    await waitForRun(mesh.gatewayUrl, started.id, (r) => r.status === 'PAUSED', 60_000);

    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      await page.goto(`${uiUrl}/namespaces/${mesh.temporal.namespace}/workflows/${encodeURIComponent(started.temporalWorkflowId)}`);
      // Its User Metadata tab: the summary, the details and the current details (each rendered in a frame of its own).
      await page.getByText('User Metadata', { exact: true }).first().click();
      const shown = async () => (await Promise.all(page.frames().map((f) => f.locator('body').innerText().catch(() => '')))).join('\n');
      const deadline = Date.now() + 30_000;
      while (!/waiting for an answer at:\s*review/.test(await shown()) && Date.now() < deadline) await page.waitForTimeout(250);
      const text = await shown();
      expect(text).toContain(`project-check in payments-api · run ${started.id.slice(0, 8)}`);
      expect(text).toContain('project: payments-api');
      expect(text).toMatch(/waiting for an answer at:\s*review \(pause [0-9a-f-]{36}\) — “Read \$ARTIFACTS_DIR\/report\.md\. Answer ["“]approve["”] to archive it/);
      mkdirSync(PICTURES, { recursive: true });
      await page.screenshot({ path: join(PICTURES, 'temporal-ui-paused-run.png') });
    } finally {
      await browser.close();
    }
  });
});
