import { getNamedType, getOperationAST, parse, TypeInfo, visit, visitWithTypeInfo, type GraphQLSchema } from 'graphql';

/**
 * What the gateway's entity cache may keep: per subgraph, the fields (`Type.field`) whose every
 * change is written in the transaction that appends its event (so the event log's NOTIFY drops
 * whatever was cached of them), and the streams those events go to. A subgraph fetch is cached only
 * when every field it selects is listed here; anything else — a field read from git, the clock,
 * Temporal, or a column some writer updates without an event — passes through uncached.
 *
 * Audited writers (2026-12): `projects` rows only through `ProjectService` and the lock and
 * workspace services, each appending its `projects` event; `runs`/`run_nodes` only through
 * `RunStore`, whose transitions append `runs` events, except `createRun` and `prepareResume` (a
 * new or resumed run's rows, then `RUN_STARTED` from the same mutation before it answers: see
 * `EVENTED_MUTATIONS`) and `setCwd`/`setCheckout`/`recordPrompt` (so `cwd`, `checkout` and
 * `prompt` are not listed).
 */
export const CACHEABLE: Readonly<Record<string, { streams: readonly string[]; fields: ReadonlySet<string> }>> = {
  projects: {
    streams: ['projects'],
    fields: new Set(['Query.projects', 'Query.project', 'Query._entities', ...['id', 'name', 'rootPath', 'createdAt', 'trusted', 'trustedWorkflowsDigest'].map((f) => `Project.${f}`)]),
  },
  runs: {
    streams: ['runs'],
    fields: new Set([
      'Query._entities',
      'Project.id',
      'Project.runs',
      'RunConnection.edges',
      'RunConnection.pageInfo',
      'RunEdge.cursor',
      'RunEdge.node',
      'PageInfo.hasNextPage',
      'PageInfo.endCursor',
      ...['id', 'workflowName', 'title', 'status', 'scope', 'inputs', 'definition', 'startedAt', 'completedAt', 'error', 'launch', 'nodes', 'project'].map((f) => `Run.${f}`),
      ...['id', 'type', 'dependsOn', 'status', 'attempt', 'output', 'outputBytes', 'outputTruncated', 'exitCode', 'error', 'startedAt', 'completedAt'].map((f) => `RunNode.${f}`),
    ]),
  },
};

/**
 * Mutations (root fields) whose every write is in a transaction that appends its event: while one
 * is in flight cached answers keep being served (its commit's NOTIFY drops them), and when it
 * answers its subgraph's entries are dropped (read-your-writes before the NOTIFY arrives). Any
 * other mutation stops every cached answer while it is in flight and drops them all when it answers:
 * it may write without an event (a run's rows before its `RUN_STARTED`) or in another subgraph's tables.
 */
export const EVENTED_MUTATIONS: ReadonlySet<string> = new Set(['setProjectTrust', 'acquireMutationLock', 'releaseMutationLock']);

/** How one subgraph operation meets the cache. */
export type FetchKind = { kind: 'cacheable' } | { kind: 'uncached' } | { kind: 'mutation'; evented: boolean };

/**
 * Classifies `query` (the operation the planner built for `subgraph`) against that subgraph's
 * schema: a query selecting only listed fields is cacheable; a mutation is evented when each of its
 * root fields is; anything that does not parse or type is uncached.
 */
export function classifyFetch(subgraph: string, schema: GraphQLSchema | undefined, query: string): FetchKind {
  let document;
  try {
    document = parse(query, { noLocation: true });
  } catch {
    return { kind: 'uncached' };
  }
  const operation = getOperationAST(document);
  if (!operation) return { kind: 'uncached' };
  if (operation.operation === 'mutation') {
    const evented = operation.selectionSet.selections.every((s) => s.kind === 'Field' && (s.name.value === '__typename' || EVENTED_MUTATIONS.has(s.name.value)));
    return { kind: 'mutation', evented };
  }
  const policy = CACHEABLE[subgraph];
  if (operation.operation !== 'query' || !policy || !schema) return { kind: 'uncached' };
  if (document.definitions.length !== 1) return { kind: 'uncached' };
  const typeInfo = new TypeInfo(schema);
  let cacheable = true;
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Field(node) {
        if (node.name.value === '__typename') return;
        const parent = typeInfo.getParentType();
        const field = typeInfo.getFieldDef();
        if (!parent || !field || !policy.fields.has(`${getNamedType(parent).name}.${node.name.value}`)) cacheable = false;
      },
      // A directive (`@include`, `@skip` on variables) is fine; anything else in a fetch is not expected.
      FragmentSpread() {
        cacheable = false;
      },
    }),
  );
  return { kind: cacheable ? 'cacheable' : 'uncached' };
}

/** The subgraphs whose entries an event on `stream` drops. */
export function subgraphsOfStream(stream: string): string[] {
  return Object.entries(CACHEABLE)
    .filter(([, p]) => p.streams.includes(stream))
    .map(([name]) => name);
}
