import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSandbox } from '@keelson/platform';
import { streams } from '@keelson/schema';
import { silentLogger } from '@keelson/service';
import { security, serviceCredentials } from '../../../../test/support/auth';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/db';
import { startProjectsSubgraph, type RunningProjects } from '../../src/index';
import type { ProjectsSettings } from '../../src/settings';
import { snapshotTree } from './fsSnapshot';
import { testGitEnv } from './gitFixtures';

export interface GraphQLErrorBody {
  message: string;
  extensions?: { code?: string; status?: number; [key: string]: unknown };
}

export interface GraphQLResponse<D> {
  /** The HTTP status of the response. */
  httpStatus: number;
  data?: D | null;
  errors?: GraphQLErrorBody[];
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Gql = <D = any>(query: string, variables?: Record<string, unknown>) => Promise<GraphQLResponse<D>>;

/** A GraphQL-over-HTTP client for one subgraph URL, speaking as any client does. */
export function graphqlClient(url: () => string): Gql {
  return async (query, variables) => {
    const res = await fetch(url(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(await serviceCredentials.headers()) },
      body: JSON.stringify({ query, variables }),
    });
    return { httpStatus: res.status, ...((await res.json()) as object) };
  };
}

/** The fields a project assertion reads. */
export const PROJECT_FIELDS = 'id name rootPath createdAt isGitRepo headCommit trusted';

export interface EventSummary {
  type: string;
  payload: unknown;
}

/** Everything a test can observe: files beneath the temp root, the registry as clients see it, the event log. */
export interface Observation {
  disk: string[];
  projects: unknown;
  events: EventSummary[];
}

export interface ProjectsHarness {
  /** The per-file temp root: workspaceRoot, keelsonHome, userHome and fixtures all live beneath it. */
  tmp: string;
  db: TestDatabase;
  settings: ProjectsSettings;
  /** The running subgraph (replaced by restart()). */
  running: RunningProjects;
  gql: Gql;
  /** Stops the subgraph and starts it again on the same database and settings. */
  restart(): Promise<void>;
  /** Another subgraph on the same database with some settings changed; stopped by close() if not before. */
  startVariant(overrides: Partial<ProjectsSettings>): Promise<{ running: RunningProjects; gql: Gql; stop(): Promise<void> }>;
  /** The last sequence number of the projects stream (0 when empty). */
  lastSeq(): Promise<number>;
  /** Events appended after `seq`, as { type, payload }. */
  eventsSince(seq: number): Promise<EventSummary[]>;
  /** A snapshot of disk, registry and event log, to compare before and after a rejected call. */
  observe(): Promise<Observation>;
  /**
   * Runs a call that must be rejected with `code`, asserting that disk, registry and event log are
   * exactly as before it; returns the error.
   */
  expectRejectedUnchanged(call: () => Promise<GraphQLResponse<unknown>>, code: string): Promise<GraphQLErrorBody>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  /**
   * Runs once the temp root exists, before the subgraph starts: makes fixtures and returns extra
   * lines for the test's global git config (hooks, templates) and extra git environment (a CA file).
   */
  prepare?: (tmp: string) => { gitConfig?: string[]; gitEnv?: NodeJS.ProcessEnv };
  settings?: Partial<ProjectsSettings>;
}

/**
 * Boots the projects subgraph in-process on port 0 against a fresh database, with a temp
 * workspaceRoot (not created: operations create it), keelsonHome and userHome, and a git
 * environment whose identity comes from a temp GIT_CONFIG_GLOBAL only.
 */
export async function startProjectsHarness(opts: HarnessOptions = {}): Promise<ProjectsHarness> {
  const tmp = realpathSync(mkdtempSync(join(tmpdir(), 'keelson-projects-')));
  const userHome = join(tmp, 'home');
  const keelsonHome = join(tmp, 'keelson-home');
  mkdirSync(userHome);
  mkdirSync(keelsonHome);
  const prepared = opts.prepare?.(tmp) ?? {};
  const settings: ProjectsSettings = {
    workspaceRoot: join(tmp, 'workspace'),
    keelsonHome,
    userHome,
    gitEnv: { ...testGitEnv(tmp, prepared.gitConfig), ...prepared.gitEnv },
    cloneTimeoutMs: 20_000,
    prepareTimeoutMs: 60_000,
    sandbox: createSandbox({ hidden: [keelsonHome] }),
    allowPrivateHosts: [],
    disableMutationLock: false,
    ...opts.settings,
  };
  const db = await createTestDatabase('keelson_projects');
  const log = silentLogger();
  const boot = (s: ProjectsSettings) => startProjectsSubgraph({ databaseUrl: db.url, host: '127.0.0.1', port: 0, security, settings: s, log });
  let running = await boot(settings);
  const variants = new Set<RunningProjects>();

  const harness: ProjectsHarness = {
    tmp,
    db,
    settings,
    get running() {
      return running;
    },
    gql: graphqlClient(() => running.url),
    async restart() {
      await running.stop();
      running = await boot(settings);
    },
    async startVariant(overrides) {
      const variant = await boot({ ...settings, ...overrides });
      variants.add(variant);
      return {
        running: variant,
        gql: graphqlClient(() => variant.url),
        stop: async () => {
          variants.delete(variant);
          await variant.stop();
        },
      };
    },
    async lastSeq() {
      const all = await running.services.events.read(streams.projects, 0, { limit: 100_000 });
      return all.at(-1)?.seq ?? 0;
    },
    async eventsSince(seq) {
      const events = await running.services.events.read(streams.projects, seq, { limit: 100_000 });
      return events.map((e) => ({ type: e.type, payload: e.payload }));
    },
    async observe() {
      const registry = await harness.gql(
        `{ projects { ${PROJECT_FIELDS} workspaces { id path branch } mutationLock { id holder purpose } } }`,
      );
      return { disk: await snapshotTree(tmp), projects: registry, events: await harness.eventsSince(0) };
    },
    async expectRejectedUnchanged(call, code) {
      const before = await harness.observe();
      const error = expectError(await call(), code);
      expect(await harness.observe()).toEqual(before);
      return error;
    },
    async close() {
      for (const variant of variants) await variant.stop();
      await running.stop();
      await db.drop();
      rmSync(tmp, { recursive: true, force: true });
    },
  };
  return harness;
}

/** The first error of a response, after asserting it carries `code` (and no data). */
export function expectError<D>(res: GraphQLResponse<D>, code: string): GraphQLErrorBody {
  expect(res.errors?.map((e) => e.extensions?.code)).toEqual([code]);
  expect(res.data ?? null).toBeNull();
  return res.errors![0]!;
}

/** The data of a response, after asserting it carries no error. */
export function expectData<D>(res: GraphQLResponse<D>): D {
  expect(res.errors).toBeUndefined();
  return res.data!;
}
