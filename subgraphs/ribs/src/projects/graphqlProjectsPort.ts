import type { ProjectsPort } from '@keelson/host';
import { cursorSchema, WORKSPACE_ACQUIRE_TIMEOUT_MS } from '@keelson/schema';
import { clientSocket, type Logger, type ServiceIdentity } from '@keelson/service';
import {
  ProjectOperationError,
  type AcquireWorkspaceRequest,
  type CloneProjectBody,
  type CreateProjectBody,
  type MutationLockRecord,
  type Project,
  type ProjectOperationStatus,
  type WorkspaceLeaseRecord,
} from '@keelson/ribs-contract';
import { createClient, type Client } from 'graphql-ws';
import type WebSocket from 'ws';

/** What the port selects of a project: the record ribs see, leases and lock holder included. */
const PROJECT_FIELDS = 'id name rootPath createdAt workspaces { id path branch purpose acquiredAt } mutationLock { id purpose holder acquiredAt }';

/** Bound of the WebSocket handshake with the projects subgraph. */
const HANDSHAKE_TIMEOUT_MS = 10_000;

interface ProjectNode {
  id: string;
  name: string;
  rootPath: string;
  createdAt: string;
  workspaces: { id: string; path: string; branch: string; purpose: string | null; acquiredAt: string }[];
  mutationLock: { id: string; purpose: string; holder: string; acquiredAt: string } | null;
}

interface GraphQLErrorShape {
  message: string;
  extensions?: { code?: unknown; status?: unknown };
}

/** The seed's status for a projects-domain error code (unknown and masked errors are 500). */
export function statusForCode(code: unknown): ProjectOperationStatus {
  switch (code) {
    case 'BAD_USER_INPUT':
    case 'NOT_FOUND':
    case 'GRAPHQL_VALIDATION_FAILED':
      return 400;
    case 'CONFLICT':
      return 409;
    case 'UPSTREAM_FAILED':
      return 502;
    case 'SERVICE_UNAVAILABLE':
      return 503;
    default:
      return 500;
  }
}

function toRecord(node: ProjectNode): Project {
  return {
    id: node.id,
    name: node.name,
    rootPath: node.rootPath,
    createdAt: node.createdAt,
    workspaces: node.workspaces.map((w) => ({ id: w.id, path: w.path, branch: w.branch, purpose: w.purpose, acquiredAt: w.acquiredAt })),
    mutationLock: node.mutationLock ? { ...node.mutationLock } : null,
  };
}

export interface GraphqlProjectsPortOptions {
  /** The projects subgraph's HTTP endpoint (`…/graphql`); its WebSocket is the same path. */
  url: string;
  /** Who the ribs service is to the projects subgraph (it refuses calls without an assertion). */
  identity: ServiceIdentity;
  log: Logger;
  /** Bound of one request. @default 60000 (a clone takes up to KEELSON_CLONE_TIMEOUT_MS) */
  timeoutMs?: number;
  /** First delay before re-subscribing after the socket drops; doubles up to 5 s. @default 200 */
  reconnectDelayMs?: number;
  /** How long `start()` waits for the first load before serving 503 and loading in the background. @default 5000 */
  startTimeoutMs?: number;
}

/**
 * The `ProjectsPort` over the projects subgraph's GraphQL API (a subgraph never imports another).
 * `getProjects()` answers synchronously from a cache: loaded with one `projects` query, refreshed
 * whenever `projectEvents` reports a change (followed over graphql-ws, resumed from the last cursor
 * after a drop), and updated at once by this port's own mutations so a registration is visible
 * immediately. Failures reject as `ProjectOperationError` with the seed's statuses (400 invalid
 * input or target, 409 conflict, 500 initialization, 502 clone, 503 until the first load and while
 * the subgraph is unreachable).
 */
export class GraphqlProjectsPort implements ProjectsPort {
  private projects: Project[] = [];
  private loaded = false;
  private cursor: string | null = null;
  private client: Client | undefined;
  private stopped = false;
  private refreshing: Promise<void> | undefined;
  private refreshAgain = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private delay: number;
  private readonly wsUrl: string;
  /** Sockets of this port, so stop() can cut one still in its handshake (dispose alone would wait on it). */
  private readonly sockets = new Set<WebSocket>();
  private readonly firstLoad: Promise<void>;
  private markLoaded!: () => void;

  constructor(private readonly opts: GraphqlProjectsPortOptions) {
    const ws = new URL(opts.url);
    ws.protocol = ws.protocol === 'https:' ? 'wss:' : 'ws:';
    this.wsUrl = ws.href;
    this.delay = opts.reconnectDelayMs ?? 200;
    this.firstLoad = new Promise((resolve) => (this.markLoaded = resolve));
  }

  /** True once the cache holds a first full load. */
  get ready(): boolean {
    return this.loaded;
  }

  /** The last `projectEvents` cursor seen (resumes the stream after a drop). */
  get lastCursor(): string | null {
    return this.cursor;
  }

  /**
   * Starts following the projects stream and loads the cache, waiting up to `startTimeoutMs` for the
   * first load; an unreachable subgraph does not fail the boot (calls answer 503 until it is back).
   */
  async start(): Promise<void> {
    this.subscribe();
    this.scheduleRefresh();
    const timeout = this.opts.startTimeoutMs ?? 5_000;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.firstLoad, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeout)))]);
    clearTimeout(timer);
    if (!this.loaded) this.opts.log.warn({ url: this.opts.url }, 'projects subgraph not reachable yet; project seams answer 503 until it is');
  }

  /** Resolves once the cache has loaded (tests and callers that must not see 503). */
  whenReady(): Promise<void> {
    return this.firstLoad;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = undefined;
    for (const socket of this.sockets) socket.terminate();
    if (client) await Promise.resolve(client.dispose()).catch(() => undefined);
    await this.refreshing?.catch(() => undefined);
  }

  getProjects(): readonly Project[] {
    return this.projects.map((p) => ({ ...p, workspaces: p.workspaces?.map((w) => ({ ...w })), mutationLock: p.mutationLock ? { ...p.mutationLock } : p.mutationLock }));
  }

  async createProject(body: CreateProjectBody): Promise<Project> {
    const data = await this.mutate<{ createProject: ProjectNode }>(
      `mutation ($input: CreateProjectInput!) { createProject(input: $input) { ${PROJECT_FIELDS} } }`,
      { input: body },
    );
    return this.upsert(toRecord(data.createProject));
  }

  async cloneProject(body: CloneProjectBody): Promise<Project> {
    const data = await this.mutate<{ cloneProject: ProjectNode }>(
      `mutation ($input: CloneProjectInput!) { cloneProject(input: $input) { ${PROJECT_FIELDS} } }`,
      { input: body },
    );
    return this.upsert(toRecord(data.cloneProject));
  }

  /** Waits up to WORKSPACE_ACQUIRE_TIMEOUT_MS: the lease's prepare step (npm ci, …) may run for minutes. */
  async acquireWorkspace(req: AcquireWorkspaceRequest): Promise<WorkspaceLeaseRecord> {
    const data = await this.mutate<{ acquireWorkspace: Omit<WorkspaceLeaseRecord, 'projectId'> & { project: ProjectNode } }>(
      `mutation ($projectId: ID!, $purpose: String, $base: WorkspaceBase) { acquireWorkspace(projectId: $projectId, purpose: $purpose, base: $base) { id path branch purpose acquiredAt project { ${PROJECT_FIELDS} } } }`,
      { projectId: req.projectId, purpose: req.purpose ?? null, base: req.base ?? null },
      Math.max(this.opts.timeoutMs ?? 60_000, WORKSPACE_ACQUIRE_TIMEOUT_MS),
    );
    const { project, ...lease } = data.acquireWorkspace;
    this.upsert(toRecord(project));
    return { ...lease, projectId: project.id };
  }

  async releaseWorkspace(id: string): Promise<boolean> {
    const data = await this.mutate<{ releaseWorkspace: boolean }>('mutation ($id: ID!) { releaseWorkspace(id: $id) }', { id });
    this.patch((p) => (p.workspaces?.some((w) => w.id === id) ? { ...p, workspaces: p.workspaces.filter((w) => w.id !== id) } : p));
    return data.releaseWorkspace;
  }

  async acquireMutationLock(req: { projectId: string; purpose: string; holder: string }): Promise<MutationLockRecord> {
    const data = await this.mutate<{ acquireMutationLock: Omit<MutationLockRecord, 'projectId'> & { project: ProjectNode } }>(
      `mutation ($projectId: ID!, $purpose: String!, $holder: String!) { acquireMutationLock(projectId: $projectId, purpose: $purpose, holder: $holder) { id purpose holder acquiredAt project { ${PROJECT_FIELDS} } } }`,
      req,
    );
    const { project, ...lock } = data.acquireMutationLock;
    this.upsert(toRecord(project));
    return { ...lock, projectId: project.id };
  }

  async releaseMutationLock(id: string): Promise<boolean> {
    const data = await this.mutate<{ releaseMutationLock: boolean }>('mutation ($id: ID!) { releaseMutationLock(id: $id) }', { id });
    this.patch((p) => (p.mutationLock?.id === id ? { ...p, mutationLock: null } : p));
    return data.releaseMutationLock;
  }

  private upsert(project: Project): Project {
    const at = this.projects.findIndex((p) => p.id === project.id);
    if (at === -1) this.projects = [...this.projects, project];
    else this.projects = this.projects.map((p, i) => (i === at ? project : p));
    return { ...project };
  }

  private patch(change: (p: Project) => Project): void {
    this.projects = this.projects.map(change);
  }

  private async mutate<T>(query: string, variables: Record<string, unknown>, timeoutMs?: number): Promise<T> {
    if (!this.loaded) throw new ProjectOperationError(503, 'the project service is not ready (the projects subgraph has not answered yet); retry shortly');
    return this.request<T>(query, variables, timeoutMs);
  }

  /** One GraphQL request; every failure is a `ProjectOperationError`. `timeoutMs` replaces the port's bound for this one. */
  async request<T>(query: string, variables: Record<string, unknown> = {}, timeoutMs?: number): Promise<T> {
    let res: Response;
    try {
      res = await fetch(this.opts.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(await this.opts.identity.headers()) },
        body: JSON.stringify({ query, variables }),
        signal: AbortSignal.timeout(timeoutMs ?? this.opts.timeoutMs ?? 60_000),
      });
    } catch (err) {
      throw new ProjectOperationError(503, `the projects subgraph at ${this.opts.url} is unreachable (${(err as Error).message}); retry shortly`);
    }
    let body: { data?: T | null; errors?: GraphQLErrorShape[] };
    try {
      body = (await res.json()) as typeof body;
    } catch {
      throw new ProjectOperationError(res.status === 503 ? 503 : 500, `the projects subgraph answered HTTP ${res.status} without a GraphQL body`);
    }
    const first = body.errors?.[0];
    if (first) throw new ProjectOperationError(statusForCode(first.extensions?.code), first.message);
    if (!body.data) throw new ProjectOperationError(500, `the projects subgraph answered HTTP ${res.status} without data`);
    return body.data;
  }

  /** Reloads the whole cache; concurrent asks coalesce into at most one more load. */
  private scheduleRefresh(): void {
    if (this.stopped) return;
    if (this.refreshing) {
      this.refreshAgain = true;
      return;
    }
    this.refreshing = (async () => {
      do {
        this.refreshAgain = false;
        try {
          const data = await this.request<{ projects: ProjectNode[] }>(`{ projects { ${PROJECT_FIELDS} } }`);
          this.projects = data.projects.map(toRecord);
          if (!this.loaded) {
            this.loaded = true;
            this.markLoaded();
          }
        } catch (err) {
          // The subscription's reconnect asks again once the subgraph is back.
          this.opts.log.debug({ err }, 'loading projects failed');
        }
      } while (this.refreshAgain && !this.stopped);
    })().finally(() => (this.refreshing = undefined));
  }

  private subscribe(): void {
    if (this.stopped) return;
    const sockets = this.sockets;
    // A handshake the server never answers must fail (and be retried) rather than hang.
    const webSocketImpl = clientSocket({
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
      onCreate: (socket) => {
        sockets.add(socket);
        socket.once('close', () => sockets.delete(socket));
      },
    });
    const client = createClient({ url: this.wsUrl, webSocketImpl, retryAttempts: 0, lazy: true, connectionParams: () => this.opts.identity.connectionParams() });
    this.client = client;
    client.on('connected', () => {
      this.delay = this.opts.reconnectDelayMs ?? 200;
      // Whatever changed while no one listened is in a full reload.
      this.scheduleRefresh();
    });
    const dropped = (why: unknown) => {
      if (this.client !== client || this.stopped) return;
      this.client = undefined;
      // dispose() awaits a handshake in progress and rejects with it when it fails: nothing to report here.
      void Promise.resolve(client.dispose()).catch(() => undefined);
      this.opts.log.debug({ err: why, cursor: this.cursor }, 'projects stream dropped; resuming from the last cursor');
      clearTimeout(this.reconnectTimer);
      this.reconnectTimer = setTimeout(() => this.subscribe(), this.delay);
      this.reconnectTimer.unref();
      this.delay = Math.min(this.delay * 2, 5_000);
    };
    client.subscribe<{ projectEvents: { cursor: string } }>(
      { query: 'subscription ($after: String) { projectEvents(after: $after) { cursor } }', variables: { after: this.cursor } },
      {
        next: (result) => {
          const cursor = result.data?.projectEvents.cursor;
          if (cursor && cursorSchema.safeParse(cursor).success) this.cursor = cursor;
          this.scheduleRefresh();
        },
        error: (err) => dropped(err),
        complete: () => dropped('completed'),
      },
    );
  }
}
