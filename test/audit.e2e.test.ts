import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createHash } from 'node:crypto';
import { bearer, gql, gqlData, subscribe, type GraphQLResponse } from './support/client';
import { startTestMesh, type TestMesh } from './support/mesh';
import { mcpProbeRib, type ProbeCall } from './support/mcpProbeRib';
import { quietTemporalRuntime } from './support/temporalServer';
import { until } from './support/until';

quietTemporalRuntime();

// The audit trail (seed 002's audit logger; CONTRACT "Reach, audit, uploads"): one entry per
// mutation and per tool call in Postgres, `auditEvents(after)` for admins, dated JSONL files.

const repo = join(__dirname, '..');
const run = promisify(execFile);

interface AuditEvent {
  cursor: string;
  kind: string;
  operation: string;
  argsDigest: string;
  outcome: string;
  service: string;
  surface: string | null;
  actor: string | null;
  actorKey: string | null;
  actorKind: string | null;
}
const AUDIT = 'subscription ($after: String) { auditEvents(after: $after) { cursor kind operation argsDigest outcome service surface actor actorKey actorKind } }';

/** sha256 of canonical JSON (sorted keys), as the mesh digests arguments. */
function digest(value: unknown): string {
  const canonical = (v: unknown): string =>
    Array.isArray(v) ? `[${v.map(canonical).join(',')}]` : v && typeof v === 'object' ? `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`).join(',')}}` : JSON.stringify(v);
  return createHash('sha256').update(canonical(value)).digest('hex');
}

describe('the audit trail', () => {
  let mesh: TestMesh;
  const calls: ProbeCall[] = [];
  let operator: { token: string; id: string };

  beforeAll(async () => {
    mesh = await startTestMesh({}, { ribHost: { available: { probe: mcpProbeRib(calls) } } });
  });
  afterAll(async () => {
    await mesh?.teardown();
  });

  it('records every mutation (refused ones too) and every tool call with the caller, an argument digest and the outcome', async () => {
    const audit = subscribe<{ auditEvents: AuditEvent }>(mesh.gatewayWsUrl, AUDIT, {});
    try {
      const made = await gqlData<{ createApiToken: { token: string; apiToken: { id: string } } }>(
        mesh.gatewayUrl,
        'mutation ($name: String!, $scopes: [String!]!) { createApiToken(name: $name, scopes: $scopes) { token apiToken { id } } }',
        { name: 'operator', scopes: ['operate', 'write'] },
      );
      operator = { token: made.createApiToken.token, id: made.createApiToken.apiToken.id };
      // Refused by the subgraph (an unknown scope): recorded with its code.
      const bad = await gql(mesh.gatewayUrl, 'mutation { createApiToken(name: "x", scopes: ["root"]) { token } }');
      expect(bad.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      // A rib tool over MCP, as the operator.
      const client = new Client({ name: 'audit-e2e', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', mesh.gatewayUrl), { requestInit: { headers: { authorization: `Bearer ${operator.token}` } } }));
      try {
        await client.callTool({ name: 'probe_stamp', arguments: { label: 'audited' } });
        await client.callTool({ name: 'probe_forbidden', arguments: { label: 'nope' } });
      } finally {
        await client.close();
      }

      // The mesh's own services may write meanwhile (service callers): the test's four are the callers' with tokens.
      const events: AuditEvent[] = [];
      while (events.length < 4) {
        const e = (await audit.next(20_000)).data!.auditEvents;
        if (e.actorKind !== 'service') events.push(e);
      }
      // The admin token's stable key (its id), not the operator's.
      const adminKey = events[0]!.actorKey!;
      expect(adminKey).toMatch(/^token:/);
      expect(adminKey).not.toBe(`token:${operator.id}`);
      expect(events.map(({ cursor: _c, ...e }) => e)).toEqual([
        { kind: 'MUTATION', operation: 'createApiToken', argsDigest: digest({ name: 'operator', scopes: ['operate', 'write'] }), outcome: 'OK', service: 'identity', surface: null, actor: expect.any(String), actorKey: adminKey, actorKind: 'token' },
        { kind: 'MUTATION', operation: 'createApiToken', argsDigest: digest({ name: 'x', scopes: ['root'] }), outcome: 'BAD_USER_INPUT', service: 'identity', surface: null, actor: expect.any(String), actorKey: adminKey, actorKind: 'token' },
        { kind: 'TOOL', operation: 'probe_stamp', argsDigest: digest({ label: 'audited' }), outcome: 'OK', service: 'ribs', surface: 'mcp', actor: expect.any(String), actorKey: `token:${operator.id}`, actorKind: 'token' },
        { kind: 'TOOL', operation: 'probe_forbidden', argsDigest: digest({ label: 'nope' }), outcome: 'POLICY_DENIED', service: 'ribs', surface: 'mcp', actor: expect.any(String), actorKey: `token:${operator.id}`, actorKind: 'token' },
      ]);
      // Never the values themselves.
      expect(JSON.stringify(events)).not.toContain('audited');

      // Resumable: after the first entry, the second comes next.
      const resumed = subscribe<{ auditEvents: AuditEvent }>(mesh.gatewayWsUrl, AUDIT, { after: events[0]!.cursor });
      try {
        let next = (await resumed.next(10_000)).data!.auditEvents;
        while (next.actorKind === 'service') next = (await resumed.next(10_000)).data!.auditEvents;
        expect(next).toEqual(events[1]);
      } finally {
        await resumed.close();
      }
    } finally {
      await audit.close();
    }
  });

  it('is for admins only', async () => {
    const refused = subscribe(mesh.gatewayWsUrl, AUDIT, {}, { auth: bearer(operator.token) });
    try {
      const first = (await refused.next(10_000).catch((err: { errors?: GraphQLResponse['errors'] }) => ({ errors: err.errors }))) as GraphQLResponse;
      expect(first.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    } finally {
      await refused.close();
    }
  });

  it('writes the dated JSONL files while it runs, and `npm run audit -- export` rewrites them from the table', async () => {
    const home = mesh.rawEnv.KEELSON_HOME!;
    const day = new Date().toISOString().slice(0, 10);
    const file = join(home, '.data', 'audit', `${day}.jsonl`);
    const lines = () => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { seq: number; kind: string; operation: string; outcome: string; actor: { key?: string } | null }) : []);
    const live = await until('the audit file', lines, (l) => l.some((e) => e.operation === 'probe_forbidden'));
    expect(live.map((e) => e.seq)).toEqual([...live.map((e) => e.seq)].sort((a, b) => a - b));
    expect(new Set(live.map((e) => e.seq)).size).toBe(live.length);
    expect(live.find((e) => e.operation === 'probe_stamp')).toMatchObject({ kind: 'TOOL', outcome: 'OK', actor: { key: `token:${operator.id}` } });

    const env = { ...process.env, DATABASE_URL: mesh.rawEnv.DATABASE_URL, KEELSON_HOME: home };
    const exported = await run('npm', ['run', '--silent', 'audit', '--', 'export', '--date', day], { cwd: repo, env });
    expect(exported.stdout.trim()).toBe(file);
    const rewritten = lines();
    expect(rewritten.map((e) => e.seq)).toEqual(expect.arrayContaining(live.map((e) => e.seq)));
    expect(exported.stderr).toContain(`${rewritten.length} entr`);

    await expect(run('npm', ['run', '--silent', 'audit', '--', 'export', '--date', 'yesterday'], { cwd: repo, env })).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining("--date must be YYYY-MM-DD, got 'yesterday'") });
  });
});
