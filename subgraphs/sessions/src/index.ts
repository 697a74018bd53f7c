import { IdempotencyKeys, AuditLog } from '@keelson/platform';
import { HARNESS_IDS, startHarnessRuntime, type CliDriver, type HarnessId, type HarnessRuntime, type HarnessSettings, type HarnessProjectsApi } from '@keelson/harness';
import { serveDomain, type SubgraphStartOptions } from '@keelson/kit';
import { ApprovalReader, CapabilityWatcher } from '@keelson/operator';
import { serviceIdentity } from '@keelson/service';
import { ApprovalService, graphqlRunGateDoor } from './approval/approval.service';
import type { SessionsServices } from './context';
import { buildSessionsSchema } from './schema';
import { UPLOADS_PATH, type TemporalTarget } from '@keelson/schema';
import { SteerService } from './steer/steer.service';
import { TaskService } from './task/task.service';
import { TemporalLink } from './temporalLink';
import { permissionEndpoint, PERMISSIONS_PATH } from './permission/permissionEndpoint';
import { uploadsEndpoint } from './upload/uploadsEndpoint';

export { buildSessionsSchema } from './schema';
export { loadSessionsConfig, projectsUrlOf } from './config';
export type { SessionsConfig } from './config';
export type { SessionsServices } from './context';

export interface StartSessionsOptions extends SubgraphStartOptions {
  settings: HarnessSettings;
  /** The projects subgraph's GraphQL URL (or an API, in tests). */
  projects: string | HarnessProjectsApi;
  /** Where tasks start their workflows; null: runTask answers SERVICE_UNAVAILABLE. */
  temporal: TemporalTarget | null;
  /** Heartbeat timeout of a task's CLI turn. @default 30000 */
  heartbeatTimeoutMs?: number;
  /** Replaces drivers (tests). */
  drivers?: Partial<Record<HarnessId, CliDriver>>;
  /** The runs subgraph's GraphQL URL: answerApproval answers run gates and policy asks through it. Absent: those are SERVICE_UNAVAILABLE. */
  runsUrl?: string;
  /** How often the harnesses' `installed` is compared for capabilitiesChanged. @default 10000 */
  capabilityPollMs?: number;
}

export interface RunningSessions {
  url: string;
  wsUrl: string;
  /** The control plane, for the worker in the same process (`harnessTask` activities) and tests. */
  runtime: HarnessRuntime;
  services: SessionsServices;
  stop(): Promise<void>;
}

/** Boots the sessions subgraph: migrate, then serve (the harness control plane over GraphQL). */
export async function startSessionsSubgraph(opts: StartSessionsOptions): Promise<RunningSessions> {
  const projects = typeof opts.projects === 'string' ? { url: opts.projects, identity: serviceIdentity(opts.security.assertions, 'sessions') } : opts.projects;
  const runtime = await startHarnessRuntime({ databaseUrl: opts.databaseUrl, settings: opts.settings, projects, log: opts.log, drivers: opts.drivers, pg: opts.security.pg });
  const temporal = new TemporalLink(opts.temporal);
  const tasks = new TaskService(runtime.plane, temporal, opts.log, opts.heartbeatTimeoutMs ?? 30_000);
  const steers = new SteerService(runtime.plane, temporal, opts.log, opts.heartbeatTimeoutMs ?? 30_000);
  // capabilitiesChanged: the harnesses' `installed`, as the read field computes it, compared here.
  const watcher = new CapabilityWatcher({
    dataSource: runtime.dataSource,
    events: runtime.events,
    source: 'HARNESS',
    intervalMs: opts.capabilityPollMs,
    log: opts.log,
    observe: () =>
      Promise.all(
        HARNESS_IDS.map(async (id) => {
          const report = await runtime.plane.capabilities(id);
          return { id, available: report.installed, state: { installed: report.installed, version: report.version }, reason: report.installed ? null : (report.reasons.startSession ?? report.reasons.resume ?? null) };
        }),
      ),
  });
  try {
    const approvals = new ApprovalService(
      new ApprovalReader(runtime.dataSource),
      runtime.plane,
      opts.runsUrl ? graphqlRunGateDoor(opts.runsUrl, opts.security.assertions, serviceIdentity(opts.security.assertions, 'sessions')) : null,
    );
    const services: SessionsServices = { plane: runtime.plane, tasks, steers, approvals, events: runtime.events, idempotency: new IdempotencyKeys(runtime.dataSource) };
    const { schema } = await buildSessionsSchema();
    const uploads = uploadsEndpoint({ uploads: runtime.plane.uploads, log: opts.log.child({ component: 'uploads' }) });
    const served = await serveDomain(
      'sessions',
      { ...opts, audit: new AuditLog(runtime.dataSource, opts.log, 'sessions') },
      schema,
      services,
      async () => {
        await watcher.stop();
        await temporal.stop();
        await runtime.stop();
      },
      { [UPLOADS_PATH]: uploads, [PERMISSIONS_PATH]: permissionEndpoint({ gate: runtime.plane.permissions, log: opts.log.child({ component: 'permissions' }) }) },
    );
    // Turns of CLIs with a permission hook now ask here before a tool runs (this process's own origin).
    runtime.plane.servePermissions(new URL(PERMISSIONS_PATH, served.url).toString());
    watcher.start();
    return { url: served.url, wsUrl: served.wsUrl, runtime, services, stop: served.stop };
  } catch (err) {
    await watcher.stop();
    await temporal.stop();
    await runtime.stop();
    throw err;
  }
}
