import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { startModelServer, type ModelServer, type Rule } from '@keelson/model-server';
import swarmRib from '@keelson/rib-swarm';
import { ClickClackClient, launchSwarm, type SwarmRecord } from '@keelson/swarms';
import { startSwarmInputSchema, streams, type EventEnvelope, type StartSwarmInput, type SwarmEventPayload } from '@keelson/schema';
import { silentLogger } from '@keelson/service';
import { clickclackBinary, freePort } from '@keelson/swarms/test/support/binary';
import { until } from '../../test/support/until';
import { createTestDatabase, type TestDatabase } from '../../test/support/db';
import { testTemporalAddress, testWorkflowBundleFile } from '../../test/support/temporalServer';
import { createActivities } from '../src/activities';
import { connectClient } from '../src/client';
import { temporalSwarmsExecutor } from '../src/swarmsExecutor';
import { openSwarmActivityDeps, type OpenedSwarmActivityDeps } from '../src/swarmDeps';
import { startWorker, type RunningWorker } from '../src/worker';
import { openActivityDeps, type OpenedActivityDeps } from '../src/workerDeps';
import type { swarm } from '../src/workflows';

export interface SwarmHarnessOptions {
  rules: Rule[];
  /** @default 3000 */
  heartbeatTimeoutMs?: number;
  /** @default 5000 */
  turnLeaseMs?: number;
}

/**
 * The `swarm` workflow on a real worker and the run's Temporal dev server, against a fresh database,
 * a managed ClickClack (the stand-in, or CLICKCLACK_BIN) and the local model server; no GraphQL.
 */
export class SwarmHarness {
  private constructor(
    readonly db: TestDatabase,
    readonly home: string,
    readonly env: Record<string, string | undefined>,
    readonly model: ModelServer,
    readonly opened: OpenedActivityDeps,
    readonly swarmDeps: OpenedSwarmActivityDeps,
    readonly worker: RunningWorker,
    readonly client: Client,
    readonly taskQueue: string,
    private readonly heartbeatTimeoutMs: number,
  ) {}

  static async start(opts: SwarmHarnessOptions): Promise<SwarmHarness> {
    const db = await createTestDatabase();
    const home = await mkdtemp(join(tmpdir(), 'keelson-swarm-'));
    const model = await startModelServer({ rules: opts.rules });
    const env: Record<string, string | undefined> = {
      ...process.env,
      KEELSON_HOME: home,
      CLICKCLACK_BIN: clickclackBinary(),
      CLICKCLACK_PORT: String(await freePort()),
      CLICKCLACK_URL: undefined,
      CLICKCLACK_TOKEN: undefined,
      KEELSON_ANTHROPIC_BASE_URL: model.anthropicBaseUrl,
      ANTHROPIC_API_KEY: 'test-key',
      KEELSON_OPENAI_BASE_URL: undefined,
      OPENAI_API_KEY: undefined,
      KEELSON_MODEL_BASE_URL: undefined,
      KEELSON_DEFAULT_PROVIDER: undefined,
    };
    const log = silentLogger();
    const opened = await openActivityDeps({
      databaseUrl: db.url,
      log,
      agentTurns: { env, home, ribHost: { overrides: { available: { swarm: swarmRib } } } },
    });
    const swarmDeps = await openSwarmActivityDeps({
      databaseUrl: db.url,
      events: opened.events,
      ops: opened.deps.ops!.store,
      env,
      home,
      agentTurns: opened.agentTurns!,
      log,
      turnLeaseMs: opts.turnLeaseMs ?? 5000,
    });
    const taskQueue = `swarm-test-${randomUUID()}`;
    const address = testTemporalAddress();
    const worker = await startWorker({ address, taskQueue, activities: createActivities({ ...opened.deps, swarm: swarmDeps.deps }), workflowBundleFile: testWorkflowBundleFile() });
    const client = await connectClient({ address });
    return new SwarmHarness(db, home, env, model, opened, swarmDeps, worker, client, taskQueue, opts.heartbeatTimeoutMs ?? 3000);
  }

  get store() {
    return this.swarmDeps.deps.store;
  }

  get bus() {
    return this.swarmDeps.deps.bus;
  }

  /** Registers and starts a swarm as `startSwarm` does. */
  async launch(raw: StartSwarmInput, opts: { continueAsNewAfterEvents?: number } = {}): Promise<{ swarmId: string; opId: string; firstRunId: string; handle: WorkflowHandle<typeof swarm> }> {
    await this.bus.ensure();
    const launched = await launchSwarm(
      { ops: this.opened.deps.ops!.store, swarms: this.store, executor: temporalSwarmsExecutor(() => Promise.resolve(this.client), { namespace: 'default', taskQueue: this.taskQueue }), heartbeatTimeoutMs: this.heartbeatTimeoutMs },
      { input: startSwarmInputSchema.parse(raw), bus: { mode: 'MANAGED', url: this.bus.url }, ...opts },
    );
    return { swarmId: launched.swarmId, opId: launched.opId, firstRunId: launched.firstRunId, handle: this.client.workflow.getHandle<typeof swarm>(launched.workflowId) };
  }

  /** Polls the swarm row until `done` holds. */
  async waitFor(swarmId: string, done: (s: SwarmRecord) => boolean, timeoutMs = 60_000): Promise<SwarmRecord> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const s = await this.store.get(swarmId);
      if (s && done(s)) return s;
      if (Date.now() > deadline) throw new Error(`swarm ${swarmId} is still ${JSON.stringify({ status: s?.status, turns: s?.turnsUsed, agents: s?.agents.map((a) => [a.id, a.status, a.turns, a.inboxDepth]) })}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Every event of the swarm's stream, in order. */
  async events(swarmId: string): Promise<EventEnvelope<SwarmEventPayload>[]> {
    const rows = (await this.opened.dataSource.query('SELECT seq, type, payload, at FROM events WHERE stream = $1 AND key = $2 ORDER BY seq', [streams.swarms, swarmId])) as {
      seq: string;
      type: string;
      payload: SwarmEventPayload;
      at: Date;
    }[];
    return rows.map((r) => ({ cursor: r.seq, stream: streams.swarms, seq: Number(r.seq), key: swarmId, type: r.type, payload: r.payload, at: r.at }));
  }

  /** The op row as the runs subgraph reads it. */
  async op(opId: string): Promise<{ status: string; result: unknown; error: string | null }> {
    const [row] = (await this.opened.dataSource.query('SELECT status, result, error FROM ops WHERE id = $1', [opId])) as { status: string; result: unknown; error: string | null }[];
    return row!;
  }

  /** The op once settled: the swarm's row ends a step before its op's (the op is settled after). */
  settledOp(opId: string): Promise<{ status: string; result: unknown; error: string | null }> {
    return until(`op ${opId} settled`, () => this.op(opId), (op) => op.status !== 'RUNNING');
  }

  /** The bus as the owner. */
  owner(): Promise<ClickClackClient> {
    return this.bus.ownerClient();
  }

  async stop(): Promise<void> {
    await this.worker.stop();
    await this.client.connection.close();
    await this.swarmDeps.close();
    await this.opened.close();
    await this.bus.managed?.stop();
    await this.model.stop();
    await this.db.drop();
    await rm(this.home, { recursive: true, force: true });
  }
}

/** Every bot token the workspace listing shows, with its revocation (read tolerantly: its shape is not recorded). */
export function tokensIn(listing: unknown): { id: string; revokedAt: string | null }[] {
  const out: { id: string; revokedAt: string | null }[] = [];
  const walk = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      if (typeof o.id === 'string' && o.id.startsWith('btok_')) out.push({ id: o.id, revokedAt: (o.revoked_at as string | null) ?? null });
      Object.values(o).forEach(walk);
    }
  };
  walk(listing);
  return out;
}
