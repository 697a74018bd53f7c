import { createDataSource, EventLog, EventNotifier, type MeshDataSource } from '@keelson/platform';
import { streams } from '@keelson/schema';
import { silentLogger } from '@keelson/service';
import { security, serviceCredentials } from '../../../../test/support/auth';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/db';
import { startMemorySubgraph, type CaptureOptions, type MemorySettings, type RunningMemory } from '../../src/index';

export interface GraphQLResponse<D> {
  data?: D | null;
  errors?: { message: string; extensions?: { code?: string; [key: string]: unknown } }[];
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Gql = <D = any>(query: string, variables?: Record<string, unknown>) => Promise<GraphQLResponse<D>>;

export interface MemoryHarness {
  db: TestDatabase;
  /** The running subgraph (replaced by restart()). */
  running: RunningMemory;
  gql: Gql;
  /** Stops the subgraph (as a crash or a deploy would) and boots it again on the same database. */
  restart(capture?: CaptureOptions): Promise<void>;
  /** Another instance on the same database (a replica); stopped by close(). */
  startReplica(capture?: CaptureOptions): Promise<RunningMemory>;
  /** Appends a `harness` stream event the way the sessions subgraph does (its own connection and transaction). */
  emit(type: string, sessionId: string, payload: Record<string, unknown>): Promise<number>;
  /** Appends a `runs` stream event the way the runs store does. */
  emitRun(type: string, runId: string, payload: Record<string, unknown>): Promise<number>;
  /** Runs SQL on a separate connection (fault injection, inspection). */
  sql<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

export interface MemoryHarnessOptions {
  settings?: MemorySettings;
  capture?: CaptureOptions;
}

/** Boots the memory subgraph in-process on port 0 against a fresh database. */
export async function startMemoryHarness(opts: MemoryHarnessOptions = {}): Promise<MemoryHarness> {
  const db = await createTestDatabase('keelson_memory');
  const log = silentLogger();
  const settings = opts.settings ?? { embeddingsMissing: 'no embeddings endpoint is configured (KEELSON_EMBEDDINGS_URL)' };
  const boot = (capture?: CaptureOptions) => startMemorySubgraph({ databaseUrl: db.url, host: '127.0.0.1', port: 0, security, settings, capture, log });
  let running: RunningMemory;
  try {
    running = await boot(opts.capture);
  } catch (err) {
    await db.drop();
    throw err;
  }
  const replicas: RunningMemory[] = [];
  // The emitter plays the sessions subgraph: a DataSource of its own, no migrations of its own.
  let emitter: (MeshDataSource & { events: EventLog; notifier: EventNotifier }) | undefined;
  const emitterOf = async () => {
    if (!emitter) {
      const ds = createDataSource({ url: db.url, entities: [], migrations: [], migrationsTableName: 'test_emitter_migrations', log, poolSize: 2 });
      await ds.dataSource.initialize();
      const notifier = new EventNotifier({ url: db.url, log });
      emitter = { ...ds, notifier, events: new EventLog(ds.dataSource, notifier) };
    }
    return emitter;
  };
  const harness: MemoryHarness = {
    db,
    get running() {
      return running;
    },
    gql: async (query, variables) => {
      const res = await fetch(running.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(await serviceCredentials.headers()) },
        body: JSON.stringify({ query, variables }),
      });
      return (await res.json()) as GraphQLResponse<never>;
    },
    async restart(capture) {
      await running.stop();
      running = await boot(capture);
    },
    async startReplica(capture) {
      const replica = await boot(capture);
      replicas.push(replica);
      return replica;
    },
    async emit(type, sessionId, payload) {
      const e = await emitterOf();
      const event = await e.dataSource.transaction((m) =>
        e.events.append(m, { stream: streams.harness, key: sessionId, type, payload: { sessionId, ...payload } }),
      );
      return event.seq;
    },
    async emitRun(type, runId, payload) {
      const e = await emitterOf();
      const event = await e.dataSource.transaction((m) => e.events.append(m, { stream: streams.runs, key: runId, type, payload: { runId, ...payload } }));
      return event.seq;
    },
    async sql(text, params) {
      const e = await emitterOf();
      return (await e.dataSource.query(text, params)) as never;
    },
    async close() {
      for (const replica of replicas) await replica.stop();
      await running.stop();
      if (emitter) {
        await emitter.notifier.stop();
        await emitter.dataSource.destroy();
      }
      await db.drop();
    },
  };
  return harness;
}

/** The data of a response, after asserting it carries no error. */
export function expectData<D>(res: GraphQLResponse<D>): D {
  expect(res.errors).toBeUndefined();
  return res.data!;
}

/** The error codes of a response. */
export function errorCodes(res: GraphQLResponse<unknown>): (string | undefined)[] {
  return (res.errors ?? []).map((e) => e.extensions?.code);
}
