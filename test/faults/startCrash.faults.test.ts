import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bearer, gqlData, registerCredentials } from '../support/client';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { leftovers, startInstallation, startMeshProcess, type StartInstallation, type StartProcess } from '../support/startProcess';
import { respond, startWorkflow, waitForRun } from '../support/runs';
import { Ledger, reconciles } from './ledger';

/**
 * Issue 15's first failure: `npm start`, a project, `project-check` paused at its gate, then the
 * whole `npm start` process group SIGKILLed (an OOM kill, a crashed terminal). A plain start on the
 * same home must come up (the dev server the dead start left is adopted, never left holding the
 * port) and the paused run must complete once answered.
 */
describe('kill -9 of the whole npm start group, then a plain restart', () => {
  let db: TestDatabase;
  let dir: string;
  let install: StartInstallation;
  let mesh: StartProcess | undefined;
  const ledger = new Ledger('kill -9 of the npm start group + plain restart');

  beforeAll(async () => {
    db = await createTestDatabase();
    dir = await mkdtemp(join(tmpdir(), 'keelson-startcrash-'));
    await writeFile(join(dir, 'gitconfig'), '[user]\n\tname = Keelson Test\n\temail = test@keelson.invalid\n[init]\n\tdefaultBranch = main\n');
    install = await startInstallation(dir, db.url);
  });

  afterAll(async () => {
    await mesh?.interrupt();
    await db.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('comes up again, adopts the dev server, and the paused project-check run completes', async () => {
    const url = install.gatewayUrl;
    mesh = await startMeshProcess(install);
    // Its output is a pipe, not a terminal: the admin token stays out of it (the token file is named).
    expect(mesh.output()).not.toContain(await mesh.token());
    expect(mesh.output()).toContain(`${install.home}/token`);
    // One log: on a pipe every line is a JSON record with an ISO time and one `service` (the gateway's
    // process and the Temporal SDK's lines included; this start logs at warn, its own lines at info).
    const notRecords = mesh.output().split('\n').filter((line) => {
      if (!line.trim()) return false;
      try {
        const record = JSON.parse(line) as { time?: unknown; service?: unknown };
        return !(typeof record.time === 'string' && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(record.time) && typeof record.service === 'string' && line.split('"service":').length === 2);
      } catch {
        return true;
      }
    });
    expect(notRecords).toEqual([]);
    let unregister = registerCredentials(url, bearer(await mesh.token()));
    const { createProject } = await gqlData<{ createProject: { id: string } }>(url, 'mutation { createProject(input: { name: "crashed" }) { id } }');
    const started = await startWorkflow(url, 'project-check', { projectId: createProject.id });
    ledger.ack(started.id);
    const paused = await waitForRun(url, started.id, (r) => r.status === 'PAUSED', 60_000);
    const { pauseId } = paused.pendingApproval!;

    const fault = ledger.fault();
    await mesh.killGroup();
    // What the issue saw: the dev server lived on in a process group of its own.
    expect(await leftovers(install)).toEqual([expect.stringMatching(/^dev server \d+$/)]);

    mesh = await startMeshProcess(install);
    const upAfter = fault.recovered();
    expect(mesh.output()).toMatch(/Temporal: adopted the dev server \(pid \d+\) an earlier start left running on/);
    unregister();
    unregister = registerCredentials(url, bearer(await mesh.token()));

    await expect(respond(url, started.id, 'review', 'approve', pauseId)).resolves.toMatchObject({ ok: true, duplicate: false });
    const done = await waitForRun(url, started.id, (r) => r.status === 'SUCCEEDED', 60_000);
    expect(done.nodes.map((n) => [n.id, n.status])).toEqual([
      ['status', 'SUCCEEDED'],
      ['inventory', 'SUCCEEDED'],
      ['report', 'SUCCEEDED'],
      ['review', 'SUCCEEDED'],
      ['archive', 'SUCCEEDED'],
    ]);
    const { runs } = await gqlData<{ runs: { edges: { node: { id: string; status: string } }[] } }>(url, '{ runs(first: 50) { edges { node { id status } } } }');
    const stored = runs.edges.map((e) => e.node);

    await mesh.interrupt();
    mesh = undefined;
    unregister();
    const left = await leftovers(install);
    expect(left).toEqual([]);
    const row = ledger.write(
      stored.map((r) => r.id),
      { failedByFaults: stored.filter((r) => r.status === 'FAILED').length, orphans: left.length, note: `restart up in ${upAfter} ms` },
    );
    expect(reconciles(row)).toBe(true);
  });
});
