// The core modules mutation testing covers (README "Mutation testing"): for each, the files Stryker
// mutates and the test files that must kill the mutants. Tests are in-process (unit, and integration
// tests on the real Postgres and Temporal dev server); an e2e test would boot a mesh per mutant.
const modules = {
  'schema-swarm-route': {
    mutate: ['schema/src/swarm/route.ts', 'schema/src/swarm/names.ts'],
    tests: ['schema/src/swarm/*.unit.test.ts'],
  },
  'temporal-workflows': {
    // The pure parts: graph, state and routing decisions workflows are replayed from.
    mutate: ['temporal/src/workflows/dagGraph.ts', 'temporal/src/workflows/dagState.ts', 'temporal/src/workflows/steerableOpState.ts', 'temporal/src/workflows/swarmRun.ts'],
    tests: ['temporal/src/workflows/*.unit.test.ts'],
  },
  'platform-confine': {
    mutate: ['platform/src/confine/*.ts', '!platform/src/confine/index.ts'],
    tests: ['platform/src/confine/*.test.ts'],
  },
  'platform-git': {
    mutate: ['platform/src/git/gitHardening.ts', 'platform/src/git/cloneUrl.ts', 'platform/src/git/privateAddress.ts'],
    tests: ['platform/src/git/*.unit.test.ts'],
  },
  'platform-sandbox': {
    mutate: ['platform/src/sandbox/bwrapArgv.ts', 'platform/src/sandbox/sandboxEnv.ts', 'platform/src/sandbox/seccompFilter.ts'],
    tests: ['platform/src/sandbox/*.unit.test.ts'],
  },
  'platform-eventlog': {
    mutate: ['platform/src/eventLog/*.ts', '!platform/src/eventLog/*.migration.ts'],
    // Its own tests: the notifier, the durable consumer, followStream and the log each have direct ones
    // (memory capture's tests, a consumer's user, only made each mutant's run slower).
    tests: ['platform/src/eventLog/*.test.ts'],
    needsServers: true,
  },
  'platform-idempotency': {
    mutate: ['platform/src/idempotency/idempotency.ts'],
    tests: ['platform/src/idempotency/*.test.ts'],
    needsServers: true,
  },
  'identity': {
    mutate: ['identity/src/*.ts', '!identity/src/*.migration.ts', '!identity/src/index.ts'],
    tests: ['identity/src/**/*.test.ts'],
    needsServers: true,
  },
  'gateway-auth': {
    mutate: ['gateway/src/auth/*.ts'],
    tests: ['gateway/src/auth/*.test.ts', 'gateway/test/gateway.int.test.ts'],
    needsServers: true,
  },
  'runs-store': {
    mutate: ['runs/src/store/*.ts'],
    tests: ['runs/src/store/*.test.ts'],
    needsServers: true,
  },
};

module.exports = { modules };
