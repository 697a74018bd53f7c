// The layers of the monorepo, bottom first: a workspace may import workspaces of its own layer or
// below, never above. Subgraphs never import one another; only tests import the testing layer. ARCHITECTURE.md draws this map; eslint
// (`npm run lint`) enforces it and test/architecture.unit.test.ts checks every workspace has a place.
const layers = [
  { name: 'names', workspaces: ['schema', 'client'], note: 'error codes, env config, event and Temporal names (pure TypeScript); the typed client for frontends' },
  { name: 'serving', workspaces: ['service'], note: 'one port for Apollo Server + graphql-ws, caller assertions, limits, logging' },
  { name: 'platform', workspaces: ['platform'], note: 'data source, migrations, event log, durable consumers, confinement, sandbox, git' },
  { name: 'contracts', workspaces: ['ribs/contract', 'ribs/shared', 'operator'], note: 'the Rib contract (and @keelson/shared, its seed-000 name); the operator plane (approval inbox, capability changes)' },
  { name: 'domains', workspaces: ['identity', 'harness', 'ribs/host'], note: 'tokens and JWTs; the harness control plane; the rib host' },
  { name: 'ribs and providers', workspaces: ['ribs/projects', 'ribs/notes', 'ribs/swarm', 'providers'], note: 'built-in ribs; model providers and agent turns' },
  { name: 'runs', workspaces: ['runs', 'swarms', 'chats'], note: 'the runs, swarms and chats domains: their tables, migrations, stores, services (over a RunsExecutor / SwarmsExecutor / ChatsExecutor the executor implements), RunsPort, the workflow catalog; the swarm engine (ClickClack client, managed bus, turn sessions, write mode); below the executor, whose activities write through their stores' },
  { name: 'executor', workspaces: ['temporal'], note: 'workflows, activities, worker, Temporal clients' },
  { name: 'subgraph kit', workspaces: ['subgraphs/kit'], note: 'the GraphQL toolkit of subgraphs: type-graphql → federation, startSubgraph, loaders, error formatting, connections, the audit plugin; nothing below it imports it' },
  { name: 'subgraphs', workspaces: ['subgraphs/projects', 'subgraphs/ribs', 'subgraphs/runs', 'subgraphs/sessions', 'subgraphs/memory', 'subgraphs/identity', 'subgraphs/swarms'], note: 'GraphQL faces; a subgraph never imports another', isolated: true },
  { name: 'gateway', workspaces: ['gateway'], note: 'Apollo Gateway, subscription router, authentication' },
  { name: 'composition', workspaces: ['stack'], note: 'the composers: startMesh, the ribs/runs/worker/memory service factories, doctor' },
  { name: 'apps', workspaces: ['apps'], note: 'one entry per deployable process (apps/<name>/main.ts), each calling one start function' },
  {
    name: 'testing',
    workspaces: ['testing/modelserver', 'testing/clickclack-standin', 'testing/host-doubles'],
    note: 'test and development doubles: the local model server (npm run model-server), the ClickClack stand-in, in-memory rib-host ports; tests import them, shipped code never',
    testOnly: true,
  },
];

module.exports = { layers };
