import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startModelServer, type ModelServer, type Rule } from '@keelson/model-server';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { POLICY_APPROVAL_NODE, POLICY_APPROVAL_WORKFLOW } from '@keelson/schema';
import { gqlData } from './support/client';
import { startTestMesh, type TestMesh } from './support/mesh';
import { mcpProbeRib, type ProbeCall } from './support/mcpProbeRib';
import { respond, waitForRun } from './support/runs';
import { quietTemporalRuntime } from './support/temporalServer';
import { until } from './support/until';

quietTemporalRuntime();

// MCP at the gateway's /mcp: the SDK's own client, the stdio entry (npm run mcp) and claude-code.

const repo = join(__dirname, '..');
const calls: ProbeCall[] = [];
const textOf = (result: object) => ((result as { content?: unknown }).content as { type: string; text: string }[]).map((c) => c.text).join('\n');

/** A token of the mesh with these scopes, made through the gateway with the admin token. */
async function tokenWith(mesh: TestMesh, name: string, scopes: string[]): Promise<string> {
  const { createApiToken } = await gqlData<{ createApiToken: { token: string } }>(mesh.gatewayUrl, 'mutation ($name: String!, $scopes: [String!]!) { createApiToken(name: $name, scopes: $scopes) { token } }', { name, scopes });
  return createApiToken.token;
}

/** An SDK client connected to the mesh's /mcp with `token` as its bearer. */
async function connect(url: URL, token: string): Promise<Client> {
  const client = new Client({ name: 'mcp-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

/** One raw JSON-RPC POST to /mcp, as any HTTP client would send it. */
async function post(url: URL, body: unknown, token?: string): Promise<{ status: number; headers: Headers; json: { error?: { code: number; message: string; data: Record<string, unknown> } } }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, json: (await res.json()) as never };
}

const callStamp = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'probe_stamp', arguments: { label: 'raw' } } };

interface ApprovalRun {
  id: string;
  status: string;
  pendingApproval: { pauseId: string; prompt: string } | null;
}

/** The paused policy-approval run an `ask` about `tool` opened, as the operator finds it. */
async function pausedApprovalOf(mesh: TestMesh, tool: string): Promise<ApprovalRun> {
  const list = () =>
    gqlData<{ runs: { edges: { node: ApprovalRun }[] } }>(mesh.gatewayUrl, `{ runs(workflowName: "${POLICY_APPROVAL_WORKFLOW}", first: 20) { edges { node { id status pendingApproval { pauseId prompt } } } } }`);
  const mine = (runs: ApprovalRun[]) => runs.find((r) => r.status === 'PAUSED' && r.pendingApproval?.prompt.includes(`tool '${tool}'`));
  const runs = await until(`an approval about ${tool}`, async () => (await list()).runs.edges.map((e) => e.node), (all) => mine(all) !== undefined);
  return mine(runs)!;
}

/** claude -p with the mesh as an MCP server (its config names /mcp and the bearer header). */
const claudeRule: Rule = {
  name: 'mcp-probe',
  match: { contains: 'MCP_PROBE' },
  reply: ({ toolRounds, toolResults }) =>
    toolRounds === 0 ? { toolCall: { name: 'probe_stamp', arguments: { label: 'from-claude' } } } : { text: `The mesh answered: ${toolResults.at(-1)?.output ?? 'nothing'}` },
};

describe('MCP at the gateway', () => {
  let mesh: TestMesh;
  let model: ModelServer;
  let url: URL;
  let admin: string;

  beforeAll(async () => {
    model = await startModelServer({ rules: [claudeRule] });
    mesh = await startTestMesh({}, { ribHost: { available: { probe: mcpProbeRib(calls) } } });
    url = new URL('/mcp', mesh.gatewayUrl);
    admin = mesh.adminToken!.token;
  });
  afterAll(async () => {
    await mesh?.teardown();
    await model?.stop();
  });

  it('lists the host tools an admin may call and runs one with the caller, its result returned', async () => {
    const client = await connect(url, admin);
    try {
      expect(client.getServerVersion()?.name).toBe('keelson-mesh');
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['probe_stamp', 'probe_forbidden', 'run_status', 'run_cancel', 'keelson_docs']));
      // The built-in coding tools work on a turn's confined directory: none over MCP.
      expect(names).not.toContain('Bash');
      expect(tools.find((t) => t.name === 'probe_stamp')?.inputSchema).toMatchObject({ type: 'object', properties: { label: { type: 'string' } }, required: ['label'] });

      const result = await client.callTool({ name: 'probe_stamp', arguments: { label: 'sdk' } });
      expect({ text: textOf(result), isError: result.isError ?? false }).toEqual({ text: 'stamped sdk', isError: false });
      expect(calls).toContainEqual({ tool: 'probe_stamp', label: 'sdk', subject: expect.stringMatching(/^token:/) });

      // A run_* tool runs too: an unknown id is its own error, not a refusal.
      const status = await client.callTool({ name: 'run_status', arguments: { id: 'no-such-run' } });
      expect({ text: textOf(status), isError: status.isError }).toEqual({ text: 'no run or op "no-such-run"', isError: true });
      // Input is checked against the tool's schema before it runs.
      const invalid = await client.callTool({ name: 'probe_stamp', arguments: { label: '' } });
      expect(invalid.isError).toBe(true);
      expect(textOf(invalid)).toMatch(/^invalid input for 'probe_stamp'/);
    } finally {
      await client.close();
    }
  });

  it('lets a policy on the mcp surface decide: the denied tool never runs', async () => {
    const client = await connect(url, admin);
    try {
      const result = await client.callTool({ name: 'probe_forbidden', arguments: { label: 'nope' } });
      expect({ text: textOf(result), isError: result.isError }).toEqual({ text: 'denied by probe:no-forbidden-over-mcp: not over MCP', isError: true });
      expect(calls.filter((c) => c.tool === 'probe_forbidden')).toEqual([]);
      await expect(client.callTool({ name: 'Bash', arguments: { command: 'true' } })).rejects.toThrow(/no tool named 'Bash' is served over MCP/);
    } finally {
      await client.close();
    }
  });

  it('holds an ask on the mcp surface for the operator: approved it runs, refused it does not', async () => {
    const client = await connect(url, admin);
    try {
      for (const [label, answer] of [
        ['asked-yes', 'approve'],
        ['asked-no', 'not this one'],
      ] as const) {
        const call = client.callTool({ name: 'probe_ask', arguments: { label } });
        const approval = await pausedApprovalOf(mesh, 'probe_ask');
        expect(approval.pendingApproval!.prompt).toMatch(/^Policy probe:ask-over-mcp asks before a caller uses tool 'probe_ask' \(surface mcp\)\.\nReason: an operator looks first\n/);
        // The question never carries the arguments, and the tool waits for the answer.
        expect(approval.pendingApproval!.prompt).not.toContain(label);
        expect(calls.filter((c) => c.label === label)).toEqual([]);
        await respond(mesh.gatewayUrl, approval.id, POLICY_APPROVAL_NODE, answer, approval.pendingApproval!.pauseId);
        await waitForRun(mesh.gatewayUrl, approval.id, (r) => r.status === 'SUCCEEDED' || r.status === 'FAILED');
        const result = await call;
        if (answer === 'approve') {
          expect({ text: textOf(result), isError: result.isError ?? false }).toEqual({ text: `stamped ${label}`, isError: false });
          expect(calls).toContainEqual({ tool: 'probe_ask', label, subject: expect.stringMatching(/^token:/) });
        } else {
          expect({ text: textOf(result), isError: result.isError }).toEqual({ text: 'denied by probe:ask-over-mcp: an operator looks first (not approved)', isError: true });
          expect(calls.filter((c) => c.label === label)).toEqual([]);
        }
      }
    } finally {
      await client.close();
    }
  });

  it('refuses a request without a credential (401) and a tool call without write (403), as JSON-RPC errors', async () => {
    const anonymous = await post(url, callStamp);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
    expect(anonymous.json.error).toMatchObject({ code: -32000, data: { code: 'UNAUTHENTICATED', status: 401 } });
    // The ribs subgraph's own /mcp takes only the gateway's signed assertion, never a bearer token.
    const direct = await post(new URL('/mcp', mesh.subgraphUrls.ribs), callStamp, admin);
    expect(direct.status).toBe(401);
    expect(direct.json.error).toMatchObject({ data: { code: 'UNAUTHENTICATED' } });

    const reader = await tokenWith(mesh, 'mcp reader', ['read']);
    const forbidden = await post(url, callStamp, reader);
    expect(forbidden.status).toBe(403);
    expect(forbidden.json.error).toMatchObject({
      message: 'calling a tool over MCP needs scope write or operate; the caller (token:mcp reader) has read',
      data: { code: 'FORBIDDEN', requiredScopes: [['write'], ['operate']] },
    });
    expect(calls.filter((c) => c.label === 'raw')).toEqual([]);

    // The reader connects and lists, but sees no tool it could not call.
    const client = await connect(url, reader);
    try {
      expect((await client.listTools()).tools).toEqual([]);
      await expect(client.callTool({ name: 'probe_stamp', arguments: { label: 'raw' } })).rejects.toThrow(/403/);
    } finally {
      await client.close();
    }
    await expect(connect(url, 'kmt_not-a-token')).rejects.toThrow(/401/);
  });

  it('holds each tool to its own scope: write calls rib tools, run_cancel needs operate, operate alone no rib tool', async () => {
    const client = await connect(url, await tokenWith(mesh, 'mcp writer', ['write']));
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['probe_stamp', 'run_status']));
      expect(names).not.toContain('run_cancel');
      const cancel = await client.callTool({ name: 'run_cancel', arguments: { id: 'any' } });
      expect({ text: textOf(cancel), isError: cancel.isError }).toEqual({ text: 'run_cancel needs scope operate; the caller (token:mcp writer) has read, write', isError: true });
      expect(textOf(await client.callTool({ name: 'probe_stamp', arguments: { label: 'writer' } }))).toBe('stamped writer');
    } finally {
      await client.close();
    }
    const operator = await connect(url, await tokenWith(mesh, 'mcp operator', ['operate']));
    try {
      const names = (await operator.listTools()).tools.map((t) => t.name);
      expect(names).toContain('run_cancel');
      expect(names).not.toContain('probe_stamp');
      const stamp = await operator.callTool({ name: 'probe_stamp', arguments: { label: 'operator' } });
      expect({ text: textOf(stamp), isError: stamp.isError }).toEqual({ text: 'probe_stamp needs scope write; the caller (token:mcp operator) has read, operate', isError: true });
      expect(calls.filter((c) => c.label === 'operator')).toEqual([]);
    } finally {
      await operator.close();
    }
  });

  it('serves stdio through npm run mcp, with the token npm start keeps in KEELSON_HOME', async () => {
    const port = new URL(mesh.gatewayUrl).port;
    const transport = new StdioClientTransport({
      // As the README has an MCP client start it: npm's own banner kept off stdout with --silent.
      command: 'npm',
      args: ['--prefix', repo, 'run', '--silent', 'mcp'],
      cwd: mesh.dir,
      env: { PATH: process.env.PATH ?? '', HOME: mesh.dir, KEELSON_HOME: mesh.rawEnv.KEELSON_HOME!, KEELSON_GATEWAY_PORT: port },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'mcp-stdio-e2e', version: '1.0.0' });
    await client.connect(transport);
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('probe_stamp');
      const result = await client.callTool({ name: 'probe_stamp', arguments: { label: 'stdio' } });
      expect(textOf(result)).toBe('stamped stdio');
      expect(calls).toContainEqual({ tool: 'probe_stamp', label: 'stdio', subject: expect.stringMatching(/^token:/) });
      const denied = await client.callTool({ name: 'probe_forbidden', arguments: { label: 'stdio' } });
      expect(denied.isError).toBe(true);
    } finally {
      await client.close();
    }
  });

  it('connects claude-code: the scripted model calls the mesh tool and answers with its result', async () => {
    const home = await mkdtemp(join(tmpdir(), 'keelson-mcp-claude-'));
    try {
      const config = { mcpServers: { keelson: { type: 'http', url: url.href, headers: { Authorization: `Bearer ${admin}` } } } };
      const { stdout } = await promisify(execFile)(
        join(repo, 'node_modules', '.bin', 'claude'),
        ['-p', '--output-format', 'stream-json', '--verbose', '--strict-mcp-config', '--mcp-config', JSON.stringify(config), '--allowedTools', 'mcp__keelson__probe_stamp', '--', 'MCP_PROBE stamp it'],
        {
          cwd: home,
          timeout: 90_000,
          env: {
            PATH: process.env.PATH,
            HOME: home,
            CLAUDE_CONFIG_DIR: join(home, 'config'),
            ANTHROPIC_BASE_URL: model.anthropicBaseUrl,
            ANTHROPIC_API_KEY: 'e2e-key',
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
            DISABLE_AUTOUPDATER: '1',
            DISABLE_TELEMETRY: '1',
            DISABLE_ERROR_REPORTING: '1',
          },
        },
      );
      const lines = stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { type: string; result?: string; is_error?: boolean });
      // The tool ran in the mesh, as the token's caller ...
      expect(calls).toContainEqual({ tool: 'probe_stamp', label: 'from-claude', subject: expect.stringMatching(/^token:/) });
      // ... its result went back to the model in the next request, and the final text uses it.
      expect(lines.at(-1)).toMatchObject({ type: 'result', is_error: false, result: 'The mesh answered: stamped from-claude' });
      const called = model.requests().filter((r) => r.api === 'anthropic' && r.userText?.includes('MCP_PROBE'));
      expect(JSON.stringify(called.at(-1)?.body)).toContain('stamped from-claude');
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });
});
