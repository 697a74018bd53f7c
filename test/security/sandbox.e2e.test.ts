// A trusted project's bash node, started through the gateway, tries what a hostile workflow or agent
// would: write outside its folder, reach the mesh over the network with whatever it finds in its
// environment, read the mesh's secrets. Each attempt fails inside the sandbox and leaves nothing.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gqlData } from '../support/client';
import { startTestMesh, type TestMesh } from '../support/mesh';
import { projectWithWorkflow, startWorkflow, waitForRun } from '../support/runs';

jest.setTimeout(120_000);

describe('a workflow node under the sandbox, through the gateway', () => {
  let mesh: TestMesh;
  let outside: string;

  beforeAll(async () => {
    mesh = await startTestMesh();
    outside = mkdtempSync(join(tmpdir(), 'keelson-outside-'));
  });
  afterAll(async () => {
    await mesh?.teardown();
    rmSync(outside, { recursive: true, force: true });
  });

  it('cannot write outside its folder, reach the gateway, or see DATABASE_URL, tokens or keys; with network: true it can connect', async () => {
    const gateway = new URL(mesh.gatewayUrl);
    const probe = (id: string, network: boolean) => `  - id: ${id}
    type: bash
    network: ${network}
    bash: |
      echo "write: $( (echo pwned > '${outside}/pwned.txt') 2>/dev/null && echo ok || echo refused)"
      echo "gateway: $( (exec 3<>/dev/tcp/127.0.0.1/${gateway.port}) 2>/dev/null && echo open || echo unreachable)"
      echo "env: $(env | cut -d= -f1 | grep -E '^(DATABASE_URL|KEELSON_|TEMPORAL_|ANTHROPIC_API_KEY|OPENAI_API_KEY)' | grep -vxE 'KEELSON_(ATTEMPT|NODE_ID|RUN_ID|WORKFLOW)' | sort | tr '\\n' ' ')"
      echo "home: $(ls -A '${mesh.rawEnv.KEELSON_HOME}' 2>/dev/null | grep -cE '^(token|assertion.key|credentials.key)$')"
`;
    const project = await projectWithWorkflow(mesh.gatewayUrl, 'sandboxed', {
      'probe.yaml': `name: probe\nnodes:\n${probe('closed', false)}${probe('open', true).replace('- id: open', '- id: open\n    depends_on: [closed]')}`,
    });
    await gqlData(mesh.gatewayUrl, 'mutation ($p: ID!) { setProjectTrust(projectId: $p, trusted: true) { trusted } }', { p: project.id });
    const started = await startWorkflow(mesh.gatewayUrl, 'probe', { projectId: project.id });
    // The node's own run variables (KEELSON_RUN_ID, KEELSON_NODE_ID, KEELSON_ATTEMPT, KEELSON_WORKFLOW) are its to see; nothing else of the mesh's.
    const done = await waitForRun(mesh.gatewayUrl, started.id, (r) => ['SUCCEEDED', 'FAILED'].includes(r.status), 60_000);
    expect(done.status).toBe('SUCCEEDED');
    const output = (id: string) => done.nodes.find((n) => n.id === id)!.output;

    expect(output('closed')).toBe('write: refused\ngateway: unreachable\nenv: \nhome: 0\n');
    // The control: the same node declaring the network reaches the gateway (which still wants a token it does not have).
    expect(output('open')).toBe('write: refused\ngateway: open\nenv: \nhome: 0\n');
    expect(readdirSync(outside)).toEqual([]);
    expect(existsSync(join(mesh.rawEnv.KEELSON_HOME!, 'token'))).toBe(true);
  });
});
