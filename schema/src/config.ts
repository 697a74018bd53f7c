import { z } from 'zod';
import { describeZodError } from './zodMessage';

const flag = z
  .enum(['1', '0', 'true', 'false', 'yes', 'no', ''])
  .optional()
  .transform((v) => v === '1' || v === 'true' || v === 'yes');

const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);
const positiveMs = (fallback: number) => z.coerce.number().int().positive().default(fallback);

/**
 * The longest a workspace's prepare step (`npm ci`, `go mod download`, …) may be given
 * (`KEELSON_WORKSPACE_PREPARE_TIMEOUT_MS` is capped here), so callers can bound a whole acquire.
 */
export const WORKSPACE_PREPARE_MAX_MS = 25 * 60_000;
/**
 * How long a caller waits for `acquireWorkspace` (fetch, worktree, prepare): the prepare cap plus the
 * fetch's bound and slack. Workflow code uses it too (an activity that acquires is bounded by it).
 */
export const WORKSPACE_ACQUIRE_TIMEOUT_MS = 30 * 60_000;

/**
 * Every environment variable the mesh reads, with its default. `.env.example` lists the same set;
 * a test keeps the two in step.
 */
export const envSchema = z.object({
  /** Postgres for every subgraph's state and the event log. @default postgres://postgres@127.0.0.1:5432/keelson */
  DATABASE_URL: z.string().url().default('postgres://postgres@127.0.0.1:5432/keelson'),
  /** An existing Temporal frontend; unset means `npm start` runs a dev server. */
  TEMPORAL_ADDRESS: z.string().min(1).optional(),
  /** @default default */
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  /** The task queue mesh workflows and activities run on; give each mesh sharing a Temporal namespace its own. @default keelson-mesh */
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('keelson-mesh'),
  /** Base URL of the Temporal Web UI, used for `temporalUiUrl` links. */
  TEMPORAL_UI_URL: z.string().url().optional(),
  /**
   * A file of the workflows bundled ahead (the `code` of Temporal's `bundleWorkflowCode` over the
   * mesh's workflows, without the tracing interceptors), which a worker loads instead of bundling at
   * start. Ignored while tracing is on (the worker then bundles with the interceptors). Unset: bundle at start.
   */
  KEELSON_WORKFLOW_BUNDLE: z.string().min(1).optional(),
  /** The mesh's own state (rib data dirs, the dev server's database file, config.json). @default ~/.keelson */
  KEELSON_HOME: z.string().min(1).optional(),
  /** Root folder of projects created without a rootPath. @default ~/keelson */
  KEELSON_WORKSPACE: z.string().min(1).optional(),
  /** Address every service binds. With KEELSON_AUTH=off only loopback is allowed. @default 127.0.0.1 */
  KEELSON_HOST: z.string().min(1).default('127.0.0.1'),
  /** The gateway's certificate chain (PEM file): with KEELSON_TLS_KEY it serves HTTPS and WSS. */
  KEELSON_TLS_CERT: z.string().min(1).optional(),
  /** The gateway's private key (PEM file), with KEELSON_TLS_CERT. */
  KEELSON_TLS_KEY: z.string().min(1).optional(),
  /**
   * Device mode (seed 002): the CA of enrolled devices (PEM file; `npm run token -- enroll-device`
   * makes it at `<KEELSON_HOME>/device-ca/ca.crt`). With it, every connection from off loopback must
   * present a client certificate of an enrolled, unrevoked device — refused at the TLS handshake
   * otherwise — and stands for that device; a bearer token alone is not accepted off loopback.
   * Needs KEELSON_TLS_CERT and KEELSON_TLS_KEY.
   */
  KEELSON_TLS_CLIENT_CA: z.string().min(1).optional(),
  /**
   * Names the proxy or load balancer in front of the gateway that terminates TLS: lets the gateway
   * serve plain HTTP on a non-loopback KEELSON_HOST, which it otherwise refuses (tokens would travel
   * in clear). Documentation in one variable: the gateway trusts that it is true.
   */
  KEELSON_TLS_TERMINATED_BY: z.string().min(1).max(200).optional(),
  /**
   * `on`: every request needs a credential (API token or JWT), loopback included. `off`: nobody is
   * asked, allowed only with a loopback KEELSON_HOST and logged loudly at every start. @default on
   */
  KEELSON_AUTH: z.enum(['on', 'off'], { error: 'expected on or off' }).default('on'),
  /**
   * The secret the gateway signs its caller assertions to subgraphs with (and mesh services theirs):
   * at least 32 characters, the same in every process. Unset: `<KEELSON_HOME>/assertion.key` (mode
   * 0600) is created on first use — enough when every process shares that home (`npm start`).
   */
  KEELSON_ASSERTION_SECRET: z.string().min(32, 'at least 32 characters').optional(),
  /** JWTs of an identity provider: its JWKS URL. With it, bearer JWTs are accepted beside API tokens. */
  KEELSON_JWT_JWKS_URL: z.string().url().optional(),
  /** The `iss` a JWT must carry (required with KEELSON_JWT_JWKS_URL). */
  KEELSON_JWT_ISSUER: z.string().min(1).optional(),
  /** The `aud` a JWT must carry (required with KEELSON_JWT_JWKS_URL). */
  KEELSON_JWT_AUDIENCE: z.string().min(1).optional(),
  /** The claim holding a JWT's scopes: a space-separated string or an array of mesh scope names. @default scope */
  KEELSON_JWT_SCOPE_CLAIM: z.string().min(1).default('scope'),
  /** The longest a JWT may live (`exp` minus `iat`, or minus now without `iat`), in seconds; one without `exp` is refused. @default 86400 */
  KEELSON_JWT_MAX_LIFETIME_S: z.coerce.number().int().positive().default(86_400),
  /**
   * Host names (beyond loopback: localhost, 127.0.0.1, [::1]) the services answer to, comma-separated,
   * e.g. `mesh.example.com,gateway`. A request or upgrade naming another Host is refused (DNS rebinding).
   */
  KEELSON_PUBLIC_HOSTS: z.string().optional(),
  /**
   * Browser origins allowed beyond the gateway's own (CORS and WebSocket upgrades), comma-separated,
   * e.g. `https://app.example.com,http://localhost:5173`. Others are refused 403.
   */
  KEELSON_ALLOWED_ORIGINS: z.string().optional(),
  KEELSON_GATEWAY_PORT: port(4000),
  /** The gateway's entity cache: subgraph answers kept per caller, dropped by the event log's NOTIFY (README "The gateway's entity cache"). @default on */
  KEELSON_GATEWAY_CACHE: z.enum(['on', 'off']).default('on'),
  /** The entity cache's bound, in MiB of answers (their JSON): the subgraph answers it keeps, and again the whole responses. @default 64 */
  KEELSON_GATEWAY_CACHE_MAX_MB: z.coerce.number().int().min(1).max(65_536).default(64),
  /** Identical queries in flight at the gateway (text, operation, variables, caller) share one execution; with the entity cache, only queries that read nothing it keeps. @default on */
  KEELSON_GATEWAY_COALESCE: z.enum(['on', 'off']).default('on'),
  /** Who shapes a query's result from its fetches' answers: the gateway's own, compiled per operation, or Apollo's `computeResponse`. @default keelson */
  KEELSON_GATEWAY_SHAPING: z.enum(['keelson', 'apollo']).default('keelson'),
  /**
   * The supergraph the gateway process serves; it reloads it when the file changes or on SIGHUP,
   * keeping open subscriptions open. @default the checked-in `schema/supergraph.graphql`
   */
  KEELSON_SUPERGRAPH_FILE: z.string().min(1).optional(),
  KEELSON_PROJECTS_PORT: port(4001),
  KEELSON_RIBS_PORT: port(4002),
  KEELSON_RUNS_PORT: port(4003),
  KEELSON_SESSIONS_PORT: port(4004),
  KEELSON_MEMORY_PORT: port(4005),
  KEELSON_IDENTITY_PORT: port(4007),
  /** Where the gateway finds the identity subgraph (set in docker-compose). @default http://127.0.0.1:<KEELSON_IDENTITY_PORT>/graphql */
  KEELSON_IDENTITY_URL: z.string().url().optional(),
  KEELSON_SWARMS_PORT: port(4006),
  /** Where the gateway and the ribs subgraph (its project seams) find the projects subgraph (set in docker-compose). @default http://127.0.0.1:<KEELSON_PROJECTS_PORT>/graphql */
  KEELSON_PROJECTS_URL: z.string().url().optional(),
  /** Where the gateway finds the ribs subgraph (set in docker-compose). @default http://127.0.0.1:<KEELSON_RIBS_PORT>/graphql */
  KEELSON_RIBS_URL: z.string().url().optional(),
  /**
   * The 32-byte key rib credentials are encrypted with at rest (AES-256-GCM), as 64 hex characters or
   * base64. Unset: a key file `<KEELSON_HOME>/credentials.key` (mode 0600) is created on first use.
   */
  KEELSON_CREDENTIALS_KEY: z
    .string()
    .regex(/^(?:[0-9a-fA-F]{64}|[A-Za-z0-9+/]{43}=)$/, 'a 32-byte key: 64 hex characters or 44 base64 characters')
    .optional(),
  /** Where the gateway finds the runs subgraph, and memory reads prompt-node turns (set in docker-compose). @default http://127.0.0.1:<KEELSON_RUNS_PORT>/graphql */
  KEELSON_RUNS_URL: z.string().url().optional(),
  /**
   * Heartbeat timeout of a run's node activities and of ops: a lost worker is noticed, and a cancel
   * reaches a running command, within about this long. @default 20000
   */
  KEELSON_RUN_HEARTBEAT_TIMEOUT_MS: z.coerce.number().int().min(1000).default(20_000),
  /** Where the gateway finds the memory subgraph (set in docker-compose). @default http://127.0.0.1:<KEELSON_MEMORY_PORT>/graphql */
  KEELSON_MEMORY_URL: z.string().url().optional(),
  /** Where the gateway finds the swarms subgraph, and the swarm rib's operator tools call it (set in docker-compose). @default http://127.0.0.1:<KEELSON_SWARMS_PORT>/graphql */
  KEELSON_SWARMS_URL: z.string().url().optional(),
  /** The `clickclack` binary a managed bus runs. @default `clickclack` on PATH */
  CLICKCLACK_BIN: z.string().min(1).optional(),
  /** A ClickClack somebody else runs (external mode): the mesh never starts, stops or resets it. */
  CLICKCLACK_URL: z.string().url().optional(),
  /** The owner's session token for an external ClickClack (`sst_…`); set alone, the URL is the loopback port. */
  CLICKCLACK_TOKEN: z.string().min(1).optional(),
  /**
   * Swarm write mode with an origin: the projects (ids or names) whose writers' branches are pushed to origin at
   * the swarm's end (after the AI-attribution check). Every other project's stay local. @default none
   */
  KEELSON_SWARM_PUBLISH_PROJECTS: z
    .string()
    .optional()
    .transform((v) => (v ?? '').split(',').map((s) => s.trim()).filter(Boolean)),
  /**
   * The command that opens a draft pull request for a pushed writer branch: a JSON array (argv, no
   * shell) that includes `--draft`; `{branch}`, `{base}`, `{title}` and `{body}` are replaced in each
   * element, e.g. `["gh","pr","create","--draft","--head","{branch}","--base","{base}","--title","{title}","--body","{body}"]`.
   * Nothing ever merges. @default none (branches are pushed, no request opened)
   */
  KEELSON_SWARM_PR_COMMAND: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || !v.trim()) return undefined;
      let argv: unknown;
      try {
        argv = JSON.parse(v);
      } catch {
        ctx.addIssue({ code: 'custom', message: 'must be a JSON array of strings (argv)' });
        return z.NEVER;
      }
      if (!Array.isArray(argv) || !argv.length || argv.some((a) => typeof a !== 'string' || !a)) {
        ctx.addIssue({ code: 'custom', message: 'must be a JSON array of non-empty strings (argv, no shell)' });
        return z.NEVER;
      }
      if (!argv.includes('--draft')) {
        ctx.addIssue({ code: 'custom', message: 'must include --draft: the swarm rib opens only draft pull requests' });
        return z.NEVER;
      }
      return argv as string[];
    }),
  /** How long the draft pull request command may take. @default 60000 */
  KEELSON_SWARM_PR_TIMEOUT_MS: z.coerce.number().int().min(1000).max(600_000).default(60_000),
  /** The loopback port of a managed ClickClack. @default 18080 */
  CLICKCLACK_PORT: z.coerce.number().int().min(1).max(65535).default(18080),
  /** Where the gateway finds the sessions subgraph, and memory capture fetches transcripts (set in docker-compose). @default http://127.0.0.1:<KEELSON_SESSIONS_PORT>/graphql */
  KEELSON_SESSIONS_URL: z.string().url().optional(),
  /**
   * How often each owning process compares its capability read fields (harness CLIs on PATH, active
   * ribs, the swarm bus, memory search) with the last `capabilitiesChanged` event. @default 10000
   */
  KEELSON_CAPABILITY_POLL_MS: z.coerce.number().int().min(100).default(10_000),
  /**
   * The model endpoint every harness CLI calls: Anthropic Messages at `<url>/v1/messages`, OpenAI
   * Chat Completions and Responses at `<url>/v1`. Unset: each CLI keeps its vendor's default endpoint.
   */
  KEELSON_MODEL_BASE_URL: z.string().url().optional(),
  /** The API key handed to every harness CLI (any value for a local model server). @default keelson-local */
  KEELSON_MODEL_API_KEY: z.string().min(1).default('keelson-local'),
  /** The model every harness CLI asks for; unset: each driver's default (codex gpt-5.5, claude its own, others keelson-scripted). */
  KEELSON_HARNESS_MODEL: z.string().min(1).optional(),
  /** Longest a harness turn may run before its process group is killed. @default 1800000 */
  KEELSON_HARNESS_TURN_TIMEOUT_MS: positiveMs(1_800_000),
  /** The largest file `POST /api/uploads` takes, in bytes. @default 26214400 (25 MiB) */
  KEELSON_UPLOAD_MAX_BYTES: z.coerce.number().int().min(1).max(1024 * 1024 * 1024).default(25 * 1024 * 1024),
  /** How long an upload may be attached after it was made, in seconds; older ones are removed. @default 86400 */
  KEELSON_UPLOAD_MAX_AGE_S: z.coerce.number().int().min(60).max(30 * 86400).default(86_400),
  /**
   * Base URL of an OpenAI-compatible embeddings API (`<url>/embeddings`, e.g. http://127.0.0.1:8080/v1).
   * With pgvector installed, memory search becomes hybrid (lexical + vector); otherwise it stays lexical.
   */
  KEELSON_EMBEDDINGS_URL: z.string().url().optional(),
  /** The embedding model to request; required with KEELSON_EMBEDDINGS_URL. */
  KEELSON_EMBEDDINGS_MODEL: z.string().min(1).optional(),
  /** Bearer token for the embeddings API, if it wants one. */
  KEELSON_EMBEDDINGS_API_KEY: z.string().min(1).optional(),
  /** Timeout of one embeddings request. @default 10000 */
  KEELSON_EMBEDDINGS_TIMEOUT_MS: positiveMs(10_000),
  /**
   * The vector length to ask the embeddings API for (its `dimensions` field) and to store. Set, memory
   * keeps an HNSW index over the vectors (pgvector 0.8+); unset, the model's own length is stored and
   * vector search is exact (a scan). Leave it unset for an API that rejects `dimensions`.
   */
  KEELSON_EMBEDDINGS_DIMENSIONS: z.coerce.number().int().min(1).max(2000, "must be at most 2000 (pgvector's HNSW limit)").optional(),
  /**
   * A vector neighbour is a hit only with a cosine similarity above this (-1 to 1). What unrelated
   * texts score depends on the model: raise it until they stop filling search results and turn contexts.
   * @default 0
   */
  KEELSON_EMBEDDINGS_MIN_SIMILARITY: z.coerce.number().min(-1).max(1).default(0),
  /**
   * How often the Temporal Schedule `memory-compaction-<task queue>` runs a compaction pass (summaries of
   * long conversations through the provider registry); 0 removes the Schedule. @default 900000
   */
  KEELSON_MEMORY_COMPACTION_INTERVAL_MS: z.coerce
    .number()
    .int()
    .refine((v) => v === 0 || v >= 1000, 'must be 0 (no schedule) or at least 1000')
    .default(900_000),
  /** Messages per summary: compaction summarises each full window of this many messages of a conversation once. @default 50 */
  KEELSON_MEMORY_COMPACTION_WINDOW: z.coerce.number().int().min(2).max(500).default(50),
  /**
   * The Anthropic Messages provider of agent turns and prompt nodes: its host (`/v1/messages` is
   * appended). Registered when this, ANTHROPIC_API_KEY or the config file's `providers.anthropic` is
   * set. @default KEELSON_MODEL_BASE_URL, else https://api.anthropic.com
   */
  KEELSON_ANTHROPIC_BASE_URL: z.string().url().optional(),
  /** The Anthropic provider's API key (sent as `x-api-key`). */
  ANTHROPIC_API_KEY: z.string().min(1).optional(),
  /** The Anthropic provider's default model. @default claude-sonnet-4-5 */
  KEELSON_ANTHROPIC_MODEL: z.string().min(1).optional(),
  /**
   * The OpenAI-compatible (Chat Completions) provider: its API root ending in `/v1`. Registered when
   * this, OPENAI_API_KEY or `providers.openai` is set. @default KEELSON_MODEL_BASE_URL + /v1, else https://api.openai.com/v1
   */
  KEELSON_OPENAI_BASE_URL: z.string().url().optional(),
  /** The OpenAI-compatible provider's API key (sent as a bearer token). */
  OPENAI_API_KEY: z.string().min(1).optional(),
  /** The OpenAI-compatible provider's default model. @default gpt-5 */
  KEELSON_OPENAI_MODEL: z.string().min(1).optional(),
  /** The provider a turn uses when it names none (beats the config file's `defaultProvider`). @default anthropic when registered, else the first registered */
  KEELSON_DEFAULT_PROVIDER: z.string().min(1).optional(),
  /** Output token cap of one model call of an agent turn. @default 8192 */
  KEELSON_AGENT_MAX_TOKENS: z.coerce.number().int().positive().default(8192),
  /** Model calls one agent turn may make (each tool round is one more). @default 24 */
  KEELSON_AGENT_MAX_ROUNDS: z.coerce.number().int().min(1).max(200).default(24),
  /** Longest a rib's agent turn runs when it sets no timeoutMs (prompt nodes use the node's timeout). @default 600000 */
  KEELSON_AGENT_TURN_TIMEOUT_MS: positiveMs(600_000),
  /** Port of the local model server (`npm run model-server`); 0 picks a free one. @default 0 */
  KEELSON_MODEL_SERVER_PORT: port(0),
  /** A JSON file of scripted replies the local model server loads (re-read on change). */
  KEELSON_MODEL_SCRIPT: z.string().min(1).optional(),
  /** Dev server ports when `npm start` runs Temporal itself. */
  KEELSON_TEMPORAL_PORT: port(7233),
  KEELSON_TEMPORAL_UI_PORT: port(8233),
  /** Comma-separated rib ids to activate; unset activates every installed rib (installed ≠ active). */
  KEELSON_RIBS: z.string().min(1).optional(),
  /** Cross-rib tool grants, `caller:target:tool[,tool]` separated by `;` (`*` = every tool of the target); unioned with the config file's crossRibGrants. */
  KEELSON_CROSS_RIB_GRANTS: z.string().min(1).optional(),
  /** Bound of one cross-rib call (and a policy ask it waits on). @default 30000 */
  KEELSON_CROSS_RIB_CALL_TIMEOUT_MS: positiveMs(30_000),
  /** Workflows a rib may start, `rib:workflow[,workflow]` separated by `;`; unioned with ribWorkflowGrants. */
  KEELSON_RIB_WORKFLOW_GRANTS: z.string().min(1).optional(),
  /** Workflows whose approval gates a rib may answer, same form; unioned with ribApprovalGrants. */
  KEELSON_RIB_APPROVAL_GRANTS: z.string().min(1).optional(),
  /**
   * The process sandbox (bubblewrap) of every Bash tool call, bash/script node and harness CLI.
   * `required`: they run under `bwrap` and refuse to run when it is missing or unusable (the error
   * names the fix); `off`: they run unconfined, and each service that runs them warns at start.
   * @default required
   */
  KEELSON_SANDBOX: z.enum(['required', 'off'], { error: 'expected required or off' }).default('required'),
  /** Operator bypass of the per-project mutation lock (emergencies only). */
  KEELSON_DISABLE_MUTATION_LOCK: flag,
  /** Git timeout for clones (and for the `git fetch origin` of a workspace based on origin's default branch). @default 60000 */
  KEELSON_CLONE_TIMEOUT_MS: positiveMs(60_000),
  /**
   * Bound of a workspace's prepare step (the detected `npm ci`, `go mod download`, …, run sandboxed
   * with network in the fresh worktree); its process group is killed after it. At most 1500000.
   * @default 600000
   */
  KEELSON_WORKSPACE_PREPARE_TIMEOUT_MS: z.coerce.number().int().positive().max(WORKSPACE_PREPARE_MAX_MS).default(600_000),
  /**
   * Non-public hosts `cloneProject` may reach. Unset (the default): none — a clone URL whose host is,
   * or resolves to, a loopback, private or link-local address is refused. `1` / `true` / `*`: any;
   * otherwise a comma-separated list of host names or IP literals (e.g. `git.internal,10.0.0.7`).
   */
  KEELSON_GIT_ALLOW_PRIVATE_HOSTS: z
    .string()
    .optional()
    .transform((v): true | string[] => {
      const value = (v ?? '').trim().toLowerCase();
      if (['1', 'true', 'yes', '*'].includes(value)) return true;
      if (['', '0', 'false', 'no'].includes(value)) return [];
      return value.split(',').map((h) => h.trim()).filter(Boolean);
    }),
  /** Maximum selection depth an operation may have (gateway and subgraphs). @default 12 */
  KEELSON_MAX_QUERY_DEPTH: z.coerce.number().int().positive().default(12),
  /** Aliases one operation may use. @default 30 */
  KEELSON_MAX_ALIASES: z.coerce.number().int().positive().default(30),
  /** Lexical tokens one document may have (checked while parsing). @default 5000 */
  KEELSON_MAX_TOKENS: z.coerce.number().int().positive().default(5000),
  /**
   * The cost one operation may have (graphql-armor's model: an object 2, a scalar 1, × 1.5 per level,
   * a list × its literal `first`/`last`): a page of 500 transcript entries costs about 12,000. @default 50000
   */
  KEELSON_MAX_COST: z.coerce.number().int().positive().default(50_000),
  /** Directives one operation may use. @default 50 */
  KEELSON_MAX_DIRECTIVES: z.coerce.number().int().positive().default(50),
  /** Bytes of one request body, after decompression. @default 1048576 */
  KEELSON_MAX_BODY_BYTES: z.coerce.number().int().min(1024).default(1024 * 1024),
  /** Subscriptions one gateway WebSocket may hold at once. @default 100 */
  KEELSON_MAX_SUBSCRIPTIONS_PER_SOCKET: z.coerce.number().int().positive().default(100),
  /** Gateway WebSockets one credential may hold open at once. @default 50 */
  KEELSON_MAX_CONNECTIONS_PER_CREDENTIAL: z.coerce.number().int().positive().default(50),
  /** Events the gateway queues for one subscriber that reads slower than its stream; one more closes its socket 1013. @default 1000 */
  KEELSON_MAX_QUEUED_EVENTS: z.coerce.number().int().positive().default(1000),
  /** Postgres statement_timeout of every mesh connection. @default 30000 */
  KEELSON_PG_STATEMENT_TIMEOUT_MS: positiveMs(30_000),
  /** Postgres idle_in_transaction_session_timeout of every mesh connection. @default 60000 */
  KEELSON_PG_IDLE_IN_TRANSACTION_TIMEOUT_MS: positiveMs(60_000),
  /** How long opening a Postgres connection may take. @default 10000 */
  KEELSON_PG_CONNECT_TIMEOUT_MS: positiveMs(10_000),
  /**
   * OpenTelemetry traces over OTLP/HTTP: the collector's (or Jaeger's) base URL, `/v1/traces` appended.
   * Unset (and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT unset): tracing is off.
   */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
  /** The full OTLP/HTTP traces URL; wins over OTEL_EXPORTER_OTLP_ENDPOINT. */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().url().optional(),
  /** Where the Temporal worker's SDK metrics are served for Prometheus (`/metrics` on KEELSON_HOST); 0 is off. @default 4009 */
  KEELSON_WORKER_METRICS_PORT: port(4009),
  /** debug | info | warn | error. @default info */
  KEELSON_LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  /** `json` (one object per line), `pretty` (readable lines), or `auto`: pretty on a terminal, JSON otherwise. @default auto */
  KEELSON_LOG_FORMAT: z.enum(['auto', 'json', 'pretty']).default('auto'),
});

export type MeshEnv = z.infer<typeof envSchema>;

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/**
 * Parses the environment once, failing fast with one line per bad variable.
 * Empty strings count as unset.
 */
export function parseEnv(env: Record<string, string | undefined>): MeshEnv {
  const cleaned: Record<string, string> = {};
  for (const key of Object.keys(envSchema.shape)) {
    const value = env[key];
    if (value !== undefined && value.trim() !== '') cleaned[key] = value.trim();
  }
  const result = envSchema.safeParse(cleaned);
  if (!result.success) {
    throw new ConfigError(`invalid environment: ${describeZodError(result.error, '')}`);
  }
  return result.data;
}

/** Expands a leading `~` or `~/` against `home`. */
export function expandHome(p: string, home: string): string {
  if (p === '~') return home;
  if (p.startsWith('~/')) return home + p.slice(1);
  return p;
}

/** Where a service reaches Temporal (its workflows' task queue included). */
export interface TemporalTarget {
  address: string;
  namespace: string;
  taskQueue: string;
  /** Base URL of the Temporal Web UI (for `temporalUiUrl` and other links); absent: no link. */
  uiUrl?: string;
}

/** `<userHome>/<name>` without a node path module (this package stays pure TypeScript). */
function underHome(userHome: string, name: string): string {
  return `${userHome.replace(/\/+$/, '')}/${name}`;
}

/** The Keelson home: `KEELSON_HOME` (a leading `~` expanded against `userHome`), else `<userHome>/.keelson`. */
export function keelsonHome(env: { KEELSON_HOME?: string }, userHome: string): string {
  return expandHome(env.KEELSON_HOME ?? underHome(userHome, '.keelson'), userHome);
}

/** The workspace root: `KEELSON_WORKSPACE` (a leading `~` expanded against `userHome`), else `<userHome>/keelson`. */
export function keelsonWorkspace(env: { KEELSON_WORKSPACE?: string }, userHome: string): string {
  return expandHome(env.KEELSON_WORKSPACE ?? underHome(userHome, 'keelson'), userHome);
}

/** A comma-separated list as its trimmed, non-empty items. */
export function listOf(value: string | undefined): string[] {
  return (value ?? '').split(',').map((v) => v.trim()).filter((v) => v.length > 0);
}

/** True for addresses that only this machine can reach. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
