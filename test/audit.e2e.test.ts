import { join } from 'node:path';
import { runAuditCli } from '@keelson/identity';
import { argsDigest, auditDir, readAuditDay } from '@keelson/platform';
import { defaultPgTimeouts } from '@keelson/service';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { gql, gqlData } from './support/client';
import { mcpProbeRib, type ProbeCall } from './support/mcpProbeRib';
import { startTestMesh, type TestMesh } from './support/mesh';
import { quietTemporalRuntime } from './support/temporalServer';
import { until } from './support/until';

quietTemporalRuntime();

// The audit log (seed 002): one entry per mutation through the gateway and per rib tool call — time,
// actor, operation, argument digest, outcome — in Postgres (the event log's `audit` stream), served
// as auditEvents(after) to admins, and written as the seed's dated JSONL by the identity service.

interface AuditEvent {
  cursor: string;
  at: string;
  type: string;
  actor: string | null;
  actorKind: string | null;
  operation: string;
  argsSha256: string;
  outcome: string;
  detail: string | null;
  service: string;
}

const AUDIT = `query ($after: String, $first: Int) { auditEvents(after: $after, first: $first) {
  edges { cursor node { cursor at type actor actorKind operation argsSha256 outcome detail service } } pageInfo { hasNextPage endCursor } } }`;

describe('the audit log', () => {
  let mesh: TestMesh;
  const calls: ProbeCall[] = [];
  const all = async (after?: string) =>
    (await gqlData<{ auditEvents: { edges: { node: AuditEvent }[] } }>(mesh.gatewayUrl, AUDIT, { first: 500, ...(after ? { after } : {}) })).auditEvents.edges.map((e) => e.node);

  beforeAll(async () => {
    mesh = await startTestMesh({}, { ribHost: { available: { probe: mcpProbeRib(calls) } } });
  });
  afterAll(async () => {
    await mesh?.teardown();
  });

  it('records each mutation (who, what, a digest of its arguments, the outcome — refusals too) and each tool call, and serves them to admins only, resumable', async () => {
    const create = 'mutation Make($name: String!) { createProject(input: { name: $name }) { id } }';
    await gqlData(mesh.gatewayUrl, create, { name: 'audited' });
    const { createApiToken } = await gqlData<{ createApiToken: { token: string } }>(mesh.gatewayUrl, 'mutation { createApiToken(name: "reader", scopes: ["read"]) { token } }');
    const reader = `Bearer ${createApiToken.token}`;
    // A reader's mutation is refused before it runs: recorded with its code.
    const refused = await gql(mesh.gatewayUrl, create, { name: 'nope' }, { headers: { authorization: reader } });
    expect(refused.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    // A tool call over MCP.
    const client = new Client({ name: 'audit-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', mesh.gatewayUrl), { requestInit: { headers: { authorization: `Bearer ${mesh.adminToken!.token}` } } }));
    try {
      await client.callTool({ name: 'probe_stamp', arguments: { label: 'audited' } });
    } finally {
      await client.close();
    }

    const entries = await until('the tool call to be recorded', () => all(), (list) => list.some((e) => e.type === 'TOOL_CALL'));
    const made = entries.find((e) => e.operation === 'mutation createProject' && e.outcome === 'ok')!;
    expect(made).toMatchObject({ type: 'MUTATION', actor: 'token:admin (npm start)', actorKind: 'token', detail: 'Make', service: 'gateway' });
    // The digest is of the document and the variables; the arguments themselves are nowhere.
    expect(made.argsSha256).toBe(argsDigest({ document: create, variables: { name: 'audited' } }));
    expect(JSON.stringify(entries)).not.toContain(createApiToken.token);
    expect(entries.find((e) => e.operation === 'mutation createProject' && e.actor === 'token:reader')).toMatchObject({ outcome: 'FORBIDDEN' });
    expect(entries.find((e) => e.operation === 'mutation createApiToken')).toMatchObject({ outcome: 'ok', actor: 'token:admin (npm start)' });
    expect(entries.find((e) => e.type === 'TOOL_CALL')).toMatchObject({ operation: 'tool probe_stamp', outcome: 'ok', detail: 'mcp', service: 'ribs', actor: 'token:admin (npm start)', argsSha256: argsDigest({ label: 'audited' }) });
    expect(calls).toContainEqual(expect.objectContaining({ tool: 'probe_stamp', label: 'audited' }));
    // Oldest first, each once; `after` resumes right after an entry.
    expect(entries.map((e) => Number(e.cursor))).toEqual([...entries.map((e) => Number(e.cursor))].sort((a, b) => a - b));
    expect(await all(entries[1]!.cursor)).toEqual(entries.slice(2).concat((await all(entries.at(-1)!.cursor))));
    // Admins only.
    const denied = await gql(mesh.gatewayUrl, AUDIT, {}, { headers: { authorization: reader } });
    expect(denied.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });

  it("writes the seed's dated JSONL as entries arrive, each once, and npm run audit -- export rebuilds a day the same", async () => {
    const dir = auditDir(mesh.workspaceRoot);
    const day = new Date().toISOString().slice(0, 10);
    const served = await all();
    const written = await until('the JSONL to catch up', () => readAuditDay(dir, day).catch(() => []), (lines) => lines.length >= served.length);
    expect(written.map((r) => [r.seq, r.operation, r.outcome, r.argsSha256])).toEqual(served.map((e) => [Number(e.cursor), e.operation, e.outcome, e.argsSha256]));

    const out: string[] = [];
    const err: string[] = [];
    const code = await runAuditCli(['export', '--date', day], { databaseUrl: mesh.rawEnv.DATABASE_URL!, pg: defaultPgTimeouts, workspace: mesh.workspaceRoot }, { out: (l) => out.push(l), err: (l) => err.push(l) });
    expect({ code, out }).toEqual({ code: 0, out: [join(dir, `${day}.jsonl`)] });
    const exported = await readAuditDay(dir, day);
    expect(exported.map((r) => r.seq)).toEqual(served.map((e) => Number(e.cursor)));
    const bad = await runAuditCli(['export', '--date', 'yesterday'], { databaseUrl: mesh.rawEnv.DATABASE_URL!, pg: defaultPgTimeouts, workspace: mesh.workspaceRoot }, { out: () => undefined, err: () => undefined });
    expect(bad).toBe(2);
  });
});
