import type { ProjectEventType } from '@keelson/schema';
import { getNamedType, getOperationAST, parse, TypeInfo, visit, visitWithTypeInfo, type GraphQLSchema } from 'graphql';

/** What `setProjectTrust` and its PROJECT_TRUSTED / PROJECT_UNTRUSTED events change: the row's `trusted` and `trusted_workflows`. */
const TRUST_FIELDS = ['Project.trusted', 'Project.trustedWorkflowsDigest'] as const;

export interface SubgraphCachePolicy {
  /** The streams whose events drop this subgraph's entries. */
  streams: readonly string[];
  /** The fields (`Type.field`) a cacheable fetch may select. */
  fields: ReadonlySet<string>;
  /**
   * Per stream, per event type: the listed fields an event of that type may change (none: it changes
   * nothing cached). Only entries selecting one of them drop. A type not listed here — or a
   * notification that names no type — may change anything: every entry of the subgraph drops.
   */
  changes?: Readonly<Record<string, Readonly<Record<string, readonly string[]>>>>;
}

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
 * new or resumed run's rows before the executor's `RUN_STARTED`: their transactions notify the
 * stream without an event, `notifyStreamChange`, which drops every `runs` entry) and
 * `setCwd`/`setCheckout`/`recordPrompt` (so `cwd`, `checkout` and `prompt` are not listed).
 */
export const CACHEABLE: Readonly<Record<string, SubgraphCachePolicy>> = {
  projects: {
    streams: ['projects'],
    fields: new Set(['Query.projects', 'Query.project', 'Query._entities', ...['id', 'name', 'rootPath', 'createdAt', 'trusted', 'trustedWorkflowsDigest'].map((f) => `Project.${f}`)]),
    // Audited (2026-12): trust changes write `trusted`/`trusted_workflows` of one row; leases and
    // locks are rows of their own tables (no listed field reads them). PROJECT_CREATED/CLONED add a
    // row (every list changes): not listed, so they drop everything.
    changes: {
      projects: {
        PROJECT_TRUSTED: TRUST_FIELDS,
        PROJECT_UNTRUSTED: TRUST_FIELDS,
        WORKSPACE_ACQUIRED: [],
        WORKSPACE_RELEASED: [],
        MUTATION_LOCK_ACQUIRED: [],
        MUTATION_LOCK_RELEASED: [],
      } satisfies Partial<Record<ProjectEventType, readonly string[]>>,
    },
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
 * Mutations (root fields) whose every write is in a transaction that appends its event, with the
 * listed fields each may change (the same as its events'): while one is in flight cached answers
 * keep being served (its commit's NOTIFY drops them), and when it answers the entries selecting
 * those fields are dropped (read-your-writes before the NOTIFY arrives). Any other mutation stops
 * every cached answer while it is in flight and drops them all when it answers: it may write what
 * no event reports or in another subgraph's tables.
 */
export const EVENTED_MUTATIONS: Readonly<Record<string, readonly string[]>> = {
  setProjectTrust: TRUST_FIELDS,
  acquireMutationLock: [],
  releaseMutationLock: [],
};

/**
 * How one subgraph operation meets the cache: a cacheable query with the fields it selects; a
 * mutation, evented with the fields it may change, or not (it may change anything).
 */
export type FetchKind =
  | { kind: 'cacheable'; fields: ReadonlySet<string> }
  | { kind: 'uncached' }
  | { kind: 'mutation'; evented: true; changes: ReadonlySet<string> }
  | { kind: 'mutation'; evented: false };

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
    const changes = new Set<string>();
    for (const s of operation.selectionSet.selections) {
      if (s.kind !== 'Field' || (s.name.value !== '__typename' && !Object.hasOwn(EVENTED_MUTATIONS, s.name.value))) return { kind: 'mutation', evented: false };
      for (const field of EVENTED_MUTATIONS[s.name.value] ?? []) changes.add(field);
    }
    return { kind: 'mutation', evented: true, changes };
  }
  const policy = CACHEABLE[subgraph];
  if (operation.operation !== 'query' || !policy || !schema) return { kind: 'uncached' };
  if (document.definitions.length !== 1) return { kind: 'uncached' };
  const typeInfo = new TypeInfo(schema);
  let cacheable = true;
  const fields = new Set<string>();
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Field(node) {
        if (node.name.value === '__typename') return;
        const parent = typeInfo.getParentType();
        const field = typeInfo.getFieldDef();
        const coordinate = parent ? `${getNamedType(parent).name}.${node.name.value}` : '';
        if (!parent || !field || !policy.fields.has(coordinate)) cacheable = false;
        else fields.add(coordinate);
      },
      // A directive (`@include`, `@skip` on variables) is fine; anything else in a fetch is not expected.
      FragmentSpread() {
        cacheable = false;
      },
    }),
  );
  return cacheable ? { kind: 'cacheable', fields } : { kind: 'uncached' };
}

/** The subgraphs whose entries an event on `stream` drops. */
export function subgraphsOfStream(stream: string): string[] {
  return Object.entries(CACHEABLE)
    .filter(([, p]) => p.streams.includes(stream))
    .map(([name]) => name);
}

/**
 * The listed fields of `subgraph` an event of `type` on `stream` may change, or undefined when it
 * may change any (a type the policy does not list, or none named).
 */
export function changesOf(subgraph: string, stream: string, type: string | undefined): readonly string[] | undefined {
  if (type === undefined) return undefined;
  const byType = CACHEABLE[subgraph]?.changes?.[stream];
  return byType && Object.hasOwn(byType, type) ? byType[type] : undefined;
}
