import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@keelson/service';
import { findTemporalCli, startDevServer, type DevServer } from '@keelson/temporal';
import { startTestMesh, type TestMesh } from './support/mesh';
import { projectWithWorkflow, respond, startWorkflow, waitForRun } from './support/runs';
import { quietTemporalRuntime } from './support/temporalServer';

quietTemporalRuntime();

const GATED = `
name: wait-for-me
nodes:
  - id: before
    type: bash
    bash: echo before | tee -a "$ARTIFACTS_DIR/effects"
  - id: gate
    type: approval
    depends_on: [before]
    prompt: Go on?
  - id: after
    type: bash
    depends_on: [gate]
    bash: echo after | tee -a "$ARTIFACTS_DIR/effects"
`;

describe('a run paused while its Temporal server restarts (file-backed dev server)', () => {
  let dir: string;
  let server: DevServer | undefined;
  let mesh: TestMesh | undefined;
  let cli: string;
  let port: number;
  let dbFilename: string;

  beforeAll(async () => {
    const found = await findTemporalCli();
    if (!found) throw new Error('the temporal CLI is missing; globalSetup says how to build it');
    cli = found;
    dir = await mkdtemp(join(tmpdir(), 'keelson-temporal-restart-'));
    port = await freePort();
    dbFilename = join(dir, 'temporal.db');
    server = await startDevServer({ cli, port, uiPort: 0, dbFilename });
    mesh = await startTestMesh({}, { temporal: { address: server.address, uiUrl: server.uiUrl } });
  });

  afterAll(async () => {
    await mesh?.teardown();
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('resumes on the answer after the server came back, each node acting once', async () => {
    const url = mesh!.gatewayUrl;
    const project = await projectWithWorkflow(url, 'restart', { 'wait-for-me.yaml': GATED });
    const started = await startWorkflow(url, 'wait-for-me', { projectId: project.id });
    const paused = await waitForRun(url, started.id, (r) => r.status === 'PAUSED');
    const { pauseId } = paused.pendingApproval!;

    const stoppedAt = Date.now();
    await server!.stop();
    server = await startDevServer({ cli, port, uiPort: 0, dbFilename });
    const downFor = Date.now() - stoppedAt;

    const answeredAt = Date.now();
    await expect(respond(url, started.id, 'gate', 'approve', pauseId)).resolves.toMatchObject({ ok: true, pauseId, duplicate: false });
    const done = await waitForRun(url, started.id, (r) => r.status === 'SUCCEEDED', 60_000);
    expect(done.nodes.map((n) => [n.id, n.status, n.output])).toEqual([
      ['before', 'SUCCEEDED', 'before\n'],
      ['gate', 'SUCCEEDED', 'approve'],
      ['after', 'SUCCEEDED', 'after\n'],
    ]);
    // Each node acted once, across the restart: nothing re-ran the node before the gate.
    expect(await readFile(join(started.artifactsDir, 'effects'), 'utf8')).toBe('before\nafter\n');
    console.log(`Temporal dev server down and back in ${downFor} ms; answer → SUCCEEDED in ${Date.now() - answeredAt} ms`);
  });
});
