import { startModelServer, type ModelServer } from '@keelson/model-server';
import { gqlData } from './support/client';
import { modelServerEnv, startTestMesh, type TestMesh } from './support/mesh';
import { projectWithWorkflow, startWorkflow, waitForRun } from './support/runs';
import { quietTemporalRuntime } from './support/temporalServer';

quietTemporalRuntime();

// Seed 000: `getMemory` is "the same MemoryTools the workflow executor binds". Prompt nodes name
// memory_write and memory_recall in allowed_tools; the worker's rib host runs them over the memory
// subgraph, and what they write is memory like any other.

const LESSON = 'the staging database rotates its password on Fridays';

const REMEMBER = `
name: remember
nodes:
  - id: write
    type: prompt
    allowed_tools: [memory_write]
    prompt: 'CALL_TOOL memory_write {"text": "${LESSON}", "kind": "lesson"}'
  - id: recall
    type: prompt
    depends_on: [write]
    allowed_tools: [memory_recall]
    prompt: 'CALL_TOOL memory_recall {"query": "staging database password"}'
  - id: unbound
    type: prompt
    depends_on: [recall]
    prompt: 'CALL_TOOL memory_write {"text": "not allowed here"}'
`;

describe('memory tools in the workflow executor', () => {
  let model: ModelServer;
  let mesh: TestMesh;

  beforeAll(async () => {
    model = await startModelServer();
    mesh = await startTestMesh(modelServerEnv(model));
  });
  afterAll(async () => {
    await mesh?.teardown();
    await model?.stop();
  });

  it('writes with memory_write and finds it again with memory_recall; a node that does not name the tool cannot call it', async () => {
    const project = await projectWithWorkflow(mesh.gatewayUrl, 'remembering', { 'remember.yaml': REMEMBER });
    const started = await startWorkflow(mesh.gatewayUrl, 'remember', { projectId: project.id });
    const run = await waitForRun(mesh.gatewayUrl, started.id, (r) => r.status === 'SUCCEEDED' || r.status === 'FAILED', 90_000);
    expect(run.nodes.map((n) => [n.id, n.status])).toEqual([
      ['write', 'SUCCEEDED'],
      ['recall', 'SUCCEEDED'],
      ['unbound', 'SUCCEEDED'],
    ]);
    const output = (id: string) => run.nodes.find((n) => n.id === id)!.output ?? '';
    expect(output('write')).toMatch(/remembered \(/);
    expect(output('recall')).toContain(`[lesson] ${LESSON}`);
    // Not in its allowed_tools: the model was never offered it, so nothing was written.
    expect(output('unbound')).toMatch(/no tool named memory_write/);

    // Memory like any other: the workflows' own conversation holds exactly the one record.
    const { memorySearch } = await gqlData<{ memorySearch: { role: string; content: string }[] }>(
      mesh.gatewayUrl,
      'query ($q: String!) { memorySearch(query: $q, agent: "rib:workflows", scope: MESSAGES, limit: 10) { role content } }',
      { q: 'staging database password' },
    );
    expect(memorySearch).toEqual([{ role: 'lesson', content: LESSON }]);
  });
});
