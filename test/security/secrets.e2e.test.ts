// Secrets stay secret: after a session of ordinary and failing use, no token (nor the assertion
// secret) appears in the logs, in an answer, in an event, anywhere in the database or in any
// Temporal history of the mesh's workflows.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import pino from 'pino';
import { bearer, gql, gqlData, subscribe } from '../support/client';
import { startTestMesh, type TestMesh } from '../support/mesh';
import { startWorkflow, waitForRun } from '../support/runs';

jest.setTimeout(120_000);
const exec = promisify(execFile);

/** Every byte array in a value, as text (Temporal payloads are bytes); the rest as it is. */
function readable(value: unknown): unknown {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  if (Array.isArray(value)) return value.map(readable);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, readable(v)]));
  return value;
}

describe('secrets', () => {
  let mesh: TestMesh;
  const logs: string[] = [];

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        logs.push(chunk.toString('utf8'));
        done();
      },
    });
    mesh = await startTestMesh({}, { log: pino({ level: 'trace' }, sink) });
  });
  afterAll(async () => {
    await mesh?.teardown();
  });

  it('never appear in logs, answers, events, the database or Temporal history', async () => {
    const admin = mesh.adminToken!.token;
    const answers: string[] = [];
    const record = <T>(value: T): T => {
      answers.push(JSON.stringify(value));
      return value;
    };

    // Ordinary use: a token made, used over HTTP and WebSocket, a run through a gate, a revocation.
    const { createApiToken } = record(await gqlData<{ createApiToken: { token: string; apiToken: { id: string } } }>(
      mesh.gatewayUrl,
      'mutation { createApiToken(name: "short-lived", scopes: ["operate", "write"]) { token apiToken { id } } }',
    ));
    const secret = createApiToken.token;
    record(await gqlData(mesh.gatewayUrl, '{ viewer { subject scopes } }', {}, { auth: bearer(secret) }));
    const { createProject } = record(await gqlData<{ createProject: { id: string } }>(mesh.gatewayUrl, 'mutation { createProject(input: { name: "secretive" }) { id } }', {}, { auth: bearer(secret) }));
    const sub = subscribe(mesh.gatewayWsUrl, 'subscription { projectEvents { type } }', {}, { auth: bearer(secret) });
    record(await sub.next());
    const run = await startWorkflow(mesh.gatewayUrl, 'project-check', { projectId: createProject.id });
    const paused = await waitForRun(mesh.gatewayUrl, run.id, (r) => r.status === 'PAUSED', 60_000);
    record(await gqlData(mesh.gatewayUrl, 'mutation ($r: ID!, $p: String) { respondToRun(runId: $r, nodeId: "review", text: "approve", pauseId: $p) { ok } }', { r: run.id, p: paused.pendingApproval!.pauseId }, { auth: bearer(secret) }));
    record(await waitForRun(mesh.gatewayUrl, run.id, (r) => r.status === 'SUCCEEDED', 60_000));
    record(await gqlData(mesh.gatewayUrl, 'mutation ($id: ID!) { revokeApiToken(id: $id) { id } }', { id: createApiToken.apiToken.id }));
    record(await sub.next(10_000));
    // Failing use: the revoked token, a near miss, a malformed header, a forged JWT.
    for (const auth of [bearer(secret), bearer(`${secret.slice(0, -1)}x`), bearer(`${admin}.x.y`)]) {
      record(await gql(mesh.gatewayUrl, '{ projects { id } }', {}, { auth }));
    }
    record(await gql(mesh.gatewayUrl, 'mutation { createApiToken(name: "", scopes: ["root"]) { token } }'));

    const assertionSecret = readFileSync(join(mesh.rawEnv.KEELSON_HOME!, 'assertion.key'), 'utf8').trim();
    const secrets = { admin, secret, assertionSecret };
    const leaks = (where: string, text: string) =>
      Object.entries(secrets).filter(([, value]) => text.includes(value)).map(([name]) => `${name} in ${where}`);

    expect(logs.length).toBeGreaterThan(20);
    // The token made in this test reached the client once, in the answer that made it; nowhere else.
    expect(answers.filter((a) => a.includes(secret))).toHaveLength(1);
    const afterCreation = answers.slice(1).join('\n');

    const events = (await mesh.runs.services.dataSource.query('SELECT stream, type, payload, actor FROM events ORDER BY stream, seq')) as unknown[];
    expect(events.length).toBeGreaterThan(10);
    const { stdout: dump } = await exec('pg_dump', ['--data-only', '--no-owner', mesh.db.url], { maxBuffer: 256 * 1024 * 1024 });
    expect(dump).toContain('short-lived');

    const connection = await Connection.connect({ address: mesh.temporal.address });
    const histories: string[] = [];
    try {
      const client = new Client({ connection, namespace: mesh.temporal.namespace });
      for await (const wf of client.workflow.list({ query: `TaskQueue = "${mesh.env.TEMPORAL_TASK_QUEUE}"` })) {
        histories.push(JSON.stringify(readable(await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory())));
      }
    } finally {
      await connection.close();
    }
    expect(histories.length).toBeGreaterThan(0);
    expect(histories.join('\n')).toContain('approve');

    expect([
      ...leaks('the logs', logs.join('')),
      ...leaks('answers after the token was made', afterCreation),
      ...leaks('the events', JSON.stringify(events)),
      ...leaks('the database', dump),
      ...leaks('Temporal history', histories.join('\n')),
    ]).toEqual([]);
  });
});
