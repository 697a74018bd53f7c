import { parseEnv, type Caller, type StartSwarmInput } from '@keelson/schema';
import type { ToolCaller } from '@keelson/ribs-contract';
import { callerIdentity, meshSecurityFromEnv, serviceCaller, serviceIdentity, type ServiceIdentity } from '@keelson/service';

/** A swarm as the operator tools show it. */
export interface SwarmSummary {
  id: string;
  task: string;
  status: string;
  turnsUsed: number;
  conclusion: string | null;
  error: string | null;
  op: { id: string };
  channel: { name: string; webUrl: string | null };
  agents: { id: string; handle: string; lead: boolean; status: string; turns: number; inboxDepth: number; finished: boolean }[];
}

/** The bus as the operator tools show it. */
export interface ServerSummary {
  mode: string;
  url: string | null;
  running: boolean;
  reason: string | null;
  version: string | null;
  liveSwarms: number;
}

export interface TranscriptMessage {
  id: string;
  body: string;
  author: { handle: string | null; displayName: string; agentId: string | null };
  replyCount: number;
}

/** What the operator tools need of the swarms service (its GraphQL API, or an in-process double in tests). */
export interface SwarmOperatorApi {
  start(input: StartSwarmInput): Promise<SwarmSummary>;
  get(id: string): Promise<SwarmSummary | null>;
  /** Running swarms, newest first. */
  live(): Promise<SwarmSummary[]>;
  stop(id: string, reason?: string): Promise<SwarmSummary>;
  /** Top-level messages, oldest first, each with its replies. */
  transcript(id: string, first: number): Promise<{ root: TranscriptMessage; replies: TranscriptMessage[] }[]>;
  server(): Promise<ServerSummary>;
  startServer(): Promise<ServerSummary>;
  stopServer(): Promise<ServerSummary>;
  resetServer(confirm: boolean): Promise<ServerSummary>;
}

const SUMMARY = 'id task status turnsUsed conclusion error op { id } channel { name webUrl } agents { id handle lead status turns inboxDepth finished }';
const SERVER = 'mode url running reason version liveSwarms';
const MESSAGE = 'id body replyCount author { handle displayName agentId }';

/**
 * The swarms subgraph over its GraphQL API (the operator tools run in any process hosting the rib),
 * as the service `identity` (subgraphs refuse calls without its signed assertion).
 */
export function graphqlSwarmApi(url: string, identity: ServiceIdentity): SwarmOperatorApi {
  const call = serviceCaller('the swarms subgraph', url, { timeoutMs: 60_000, identity });
  return {
    async start(input) {
      return (await call<{ startSwarm: SwarmSummary }>(`mutation ($input: StartSwarmInput!) { startSwarm(input: $input) { ${SUMMARY} } }`, { input })).startSwarm;
    },
    async get(id) {
      return (await call<{ swarm: SwarmSummary | null }>(`query ($id: ID!) { swarm(id: $id) { ${SUMMARY} } }`, { id })).swarm;
    },
    async live() {
      return (await call<{ swarms: { edges: { node: SwarmSummary }[] } }>(`{ swarms(status: RUNNING, first: 50) { edges { node { ${SUMMARY} } } } }`)).swarms.edges.map((e) => e.node);
    },
    async stop(id, reason) {
      return (await call<{ stopSwarm: SwarmSummary }>(`mutation ($id: ID!, $reason: String) { stopSwarm(id: $id, reason: $reason) { ${SUMMARY} } }`, { id, reason: reason ?? null })).stopSwarm;
    },
    async transcript(id, first) {
      const page = await call<{ swarm: { messages: { edges: { node: TranscriptMessage }[] } } | null }>(
        `query ($id: ID!, $first: Int) { swarm(id: $id) { messages(first: $first) { edges { node { ${MESSAGE} } } } } }`,
        { id, first },
      );
      if (!page.swarm) return [];
      const out: { root: TranscriptMessage; replies: TranscriptMessage[] }[] = [];
      for (const { node } of page.swarm.messages.edges) {
        if (node.replyCount === 0) {
          out.push({ root: node, replies: [] });
          continue;
        }
        const t = await call<{ swarm: { thread: { replies: TranscriptMessage[] } } }>(`query ($id: ID!, $root: ID!) { swarm(id: $id) { thread(rootId: $root) { replies { ${MESSAGE} } } } }`, { id, root: node.id });
        out.push({ root: node, replies: t.swarm.thread.replies });
      }
      return out;
    },
    async server() {
      return (await call<{ swarmServer: ServerSummary }>(`{ swarmServer { ${SERVER} } }`)).swarmServer;
    },
    async startServer() {
      return (await call<{ startSwarmServer: ServerSummary }>(`mutation { startSwarmServer { ${SERVER} } }`)).startSwarmServer;
    },
    async stopServer() {
      return (await call<{ stopSwarmServer: ServerSummary }>(`mutation { stopSwarmServer { ${SERVER} } }`)).stopSwarmServer;
    },
    async resetServer(confirm) {
      return (await call<{ resetSwarmServer: ServerSummary }>(`mutation ($c: Boolean!) { resetSwarmServer(confirm: $c) { ${SERVER} } }`, { c: confirm })).resetSwarmServer;
    },
  };
}

/** The swarms service as one caller sees it; without a caller, a read-only service identity. */
export type SwarmOperatorFactory = (caller?: Readonly<ToolCaller>) => SwarmOperatorApi;

let configured: SwarmOperatorFactory | undefined;

/**
 * Points this process's operator tools at a swarms service (the stack does, with the URL it booted);
 * otherwise they call KEELSON_SWARMS_URL, else the local port KEELSON_SWARMS_PORT (4006).
 */
export function configureSwarmOperator(factory: SwarmOperatorFactory | undefined): void {
  configured = factory;
}

/**
 * The swarms service the operator tools call, as `caller` — the turn's originating caller, held to
 * its own scopes there (a reader cannot reset the bus through a tool) — or, when no caller is known
 * (a rib's own turn, the board), as the read-only service `swarm-rib`. The configured factory, else
 * KEELSON_SWARMS_URL (or the local port) with the mesh's assertion key from the environment.
 */
export function operatorApi(caller?: Readonly<ToolCaller>, env: Record<string, string | undefined> = process.env): SwarmOperatorApi {
  if (configured) return configured(caller);
  const e = parseEnv(env);
  const key = meshSecurityFromEnv(e).assertions;
  const url = e.KEELSON_SWARMS_URL ?? `http://127.0.0.1:${e.KEELSON_SWARMS_PORT}/graphql`;
  return graphqlSwarmApi(url, caller ? callerIdentity(key, caller as Caller) : serviceIdentity(key, 'swarm-rib', ['read']));
}
