/** Names shared by the worker, the client helpers and the subgraphs that start workflows. */
export const TASK_QUEUE = 'keelson-mesh';

export const workflowTypes = {
  /** The proof workflow: one activity round trip, proves the pipe end to end. */
  echo: 'echoWorkflow',
  /** A run of a workflow definition: ready nodes in parallel, approval gates, continue-as-new. */
  dagRun: 'dagRun',
  /** A durable long-running op: frames and a terminal result in the `ops` stream; cancel and steer. */
  durableOp: 'durableOp',
  /** A harness CLI run headless for a task (one turn, an activity that heartbeats and is cancellable). */
  harnessTask: 'harnessTask',
  /** A rib's `registerOp`: the work runs in the registering process, held by an activity on its own task queue. */
  ribOp: 'ribOp',
  /** The work of a `durableOp`/`ribOp` as a child workflow, so the op itself can continue as new while it runs. */
  opWork: 'opWork',
  /** The server heartbeat of one snapshot region: refresh on its cadence, six times slower while idle. */
  regionRefresh: 'regionRefresh',
  /** Summarises long memory conversations, window by window, through the provider registry (started by a Temporal Schedule). */
  memoryCompaction: 'memoryCompaction',
  /** A swarm (seed 001): agents on a ClickClack bus, one durable op; bus events arrive as id-only signals. */
  swarm: 'swarm',
  /** A session's queue of steers (`steerSession`), each run as the session's next turn in order. */
  sessionSteer: 'sessionSteer',
  /** A chat (seed 000): one conversation with an agent, a turn at a time, its messages through an Update. */
  chat: 'chat',
} as const;

/** `KeelsonKind` values: what a Temporal workflow of the mesh is. */
export const workflowKinds = {
  proof: 'proof',
  run: 'run',
  op: 'op',
  /** The work child of an op (`opWork`, `op-work-<op id>`). */
  opWork: 'op-work',
  task: 'task',
  /** A region's refresh heartbeat (`regionRefresh`). */
  refresh: 'refresh',
  /** A memory compaction pass (`memoryCompaction`) and its Schedule. */
  compaction: 'compaction',
  /** A swarm (`swarm`): one durable op whose op row names this workflow. */
  swarm: 'swarm',
  /** A session's steer queue (`sessionSteer`, `session-steer-<session id>`). */
  steer: 'steer',
  /** A chat (`chat`, `chat-<chat id>`). */
  chat: 'chat',
} as const;

/**
 * Custom search attributes every mesh workflow sets, registered on the dev server at start
 * (`--search-attribute Name=Keyword`) and by `temporal operator search-attribute create` elsewhere.
 */
export const searchAttributes = {
  rib: 'KeelsonRib',
  workflowName: 'KeelsonWorkflowName',
  project: 'KeelsonProject',
  kind: 'KeelsonKind',
  /** The harness a task runs (`claude-code`, `codex`, …). */
  harness: 'KeelsonHarness',
} as const;

export type SearchAttributeName = (typeof searchAttributes)[keyof typeof searchAttributes];
