import { join } from 'node:path';
import { createSandbox } from '@keelson/platform';
import { createLogger, type Logger } from '@keelson/service';
import { isInRibNamespace, layoutRegions, surfaceRegionSchema, type RibExec, type RibSurfaceRegion } from '@keelson/ribs-contract';
import type { ActiveRib } from './activation/activeRib';
import { applyRibFilter } from './activation/ribFilter';
import { registerRib } from './activation/registerRib';
import { validateActivation } from './activation/validateActivation';
import { fileConfigPort } from './config/fileConfigPort';
import { resolveCrossRibGrants, resolveRibWorkflowGrants } from './config/grants';
import { parseHostEnv, type HostEnv } from './config/hostEnv';
import { codingTools } from './builtins/codingTools';
import { memoryTools } from './builtins/memoryTools';
import { buildRibContext } from './context/buildRibContext';
import { credentialSeam } from './credentials/credentialSeam';
import { collectCandidates } from './discovery/collectCandidates';
import { defaultNodeModulesRoots } from './discovery/discoverInstalledRibs';
import type { RibCandidate } from './discovery/ribCandidate';
import { DocsCatalog, defaultFetchText } from './docs/docsCatalog';
import { keelsonDocsTool } from './docs/keelsonDocsTool';
import { describeIssues } from './errors';
import { createExec } from './exec/createExec';
import { AUTH_PROBE_TIMEOUT_MS } from './hooks/authStatus';
import { checkSurface } from './manifest/descriptorChecks';
import { DynamicRegions } from './manifest/dynamicRegions';
import { ManifestEvents } from './manifest/manifestEvents';
import { InMemorySnapshotStore } from './memory/inMemorySnapshotStore';
import { pathConfinementPolicy } from './policy/pathConfinement';
import { PolicyEngine } from './policy/policyEngine';
import { projectSeams } from './projects/projectSeams';
import type { InstalledRib, RibHost, RibHostOptions, SurfaceRegionRef } from './ribHost';
import { disposeRibs, ribHostObject, type HostGrantSet, type HostServices } from './ribHostObject';
import { RunEventDispatcher } from './runs/runEventDispatcher';
import { createScopedSnapshotManager } from './snapshots/scopedSnapshotManager';
import { SnapshotHub } from './snapshots/snapshotHub';
import { callRibTool, type CrossRibCallerDeps } from './tools/crossRibCaller';
import { toolReachability } from './tools/reachability';
import { ToolRegistry } from './tools/toolRegistry';
import { ToolRunner } from './tools/toolRunner';
import { createWarningSink, type WarningSink } from './warnings';
import { mergeRibWorkflows, type RibWorkflowEntry } from './workflows/workflowCatalog';

/**
 * Boots the rib host through the seed's lifecycle: discovery (installed `@keelson/rib-*` packages,
 * or the explicit `available` map; shape failures skip that rib with a warning), the `KEELSON_RIBS`
 * filter, validation (namespace violations, an id diverging from its package, duplicate rib or
 * surface ids throw a `RibActivationError`, so boot fails), then registration in activation order.
 * Rejects when activation fails, after disposing the ribs already activated.
 */
export async function createRibHost(options: RibHostOptions = {}): Promise<RibHost> {
  const hostEnv = parseHostEnv(options.env ?? process.env);
  const home = options.home ?? hostEnv.home;
  const logger = options.logger ?? createLogger('rib-host');
  const warn = createWarningSink(logger, options.onWarning);
  const lifetime = new AbortController();
  const exec = options.exec ?? createExec({ signal: lifetime.signal });

  const config = await (options.config ?? fileConfigPort(home, warn)).load();
  const grants: HostGrantSet = {
    crossRibGrants: resolveCrossRibGrants(config, hostEnv.crossRibGrants, warn),
    workflowGrants: resolveRibWorkflowGrants(config.ribWorkflowGrants, 'KEELSON_RIB_WORKFLOW_GRANTS', hostEnv.ribWorkflowGrants, warn),
    approvalGrants: resolveRibWorkflowGrants(config.ribApprovalGrants, 'KEELSON_RIB_APPROVAL_GRANTS', hostEnv.ribApprovalGrants, warn),
    denylist: new Set(config.toolDenylist ?? []),
  };
  const services = createHostServices(options, hostEnv.sandbox, home, logger, warn, lifetime.signal);
  const authTimeout = options.authProbeTimeoutMs ?? AUTH_PROBE_TIMEOUT_MS;

  const active = new Map<string, ActiveRib>();
  const crossDeps: CrossRibCallerDeps = {
    registry: services.registry,
    runner: services.runner,
    grants: () => grants.crossRibGrants,
    isActive: (id) => active.has(id),
    defaultTimeoutMs: hostEnv.crossRibCallTimeoutMs,
  };

  // 1. Discovery, 2. filter, 3. validation.
  const candidates = collectCandidates({
    available: options.available,
    discover: options.discover ?? options.available === undefined,
    roots: options.nodeModulesRoots ?? defaultNodeModulesRoots(),
    warn,
  });
  const selected = applyRibFilter(candidates, hostEnv.ribs, warn);
  const surfaceIdsByRib = validateActivation(selected);
  const declaredRegions = declaredRegionsOf(selected);

  // 4. Registration, in activation order.
  const { perRibWorkflows, warmUps } = await activateRibs(selected, surfaceIdsByRib, {
    options,
    home,
    exec,
    services,
    grants,
    active,
    crossDeps,
    warn,
    lifetime,
  });

  const merged = mergeRibWorkflows(perRibWorkflows);
  warnActivationFindings(merged.shadowed, declaredRegions, warn);

  const installed: InstalledRib[] = candidates.map((c) => ({
    id: c.key,
    source: c.source,
    active: active.get(c.rib.id)?.rib === c.rib,
    ...(c.packageName ? { packageName: c.packageName } : {}),
    ...(c.packageDir ? { packageDir: c.packageDir } : {}),
  }));

  return ribHostObject({
    ...services,
    ...grants,
    active,
    crossDeps,
    declaredRegions,
    installed,
    workflows: merged.entries,
    warmUps,
    callTimeoutMs: hostEnv.crossRibCallTimeoutMs,
    authTimeout,
    warn,
    lifetime,
  });
}

/**
 * Builds the host's services in boot order: the snapshot hub, the tool registry, the policy engine
 * (path confinement, then the embedder's `builtin:` policies), the tool runner, the docs catalog,
 * then the host's own tools (registered first, so no rib can claim their names), and the manifest's
 * event, region and run-event books.
 */
function createHostServices(
  options: RibHostOptions,
  sandboxMode: HostEnv['sandbox'],
  home: string,
  logger: Logger,
  warn: WarningSink,
  signal: AbortSignal,
): HostServices {
  const hub = new SnapshotHub(options.snapshotStore ?? new InMemorySnapshotStore(), warn);
  const registry = new ToolRegistry();
  const policies = new PolicyEngine(warn, options.approvals);
  policies.add(pathConfinementPolicy(), 'builtin');
  for (const policy of options.builtinPolicies ?? []) {
    if (!policy.id.startsWith('builtin:')) throw new Error(`host policy '${policy.id}' must be named builtin:<name>`);
    policies.add(policy, 'builtin');
  }
  const runner = new ToolRunner(registry, policies, home, signal, options.audit);
  const docs = new DocsCatalog(options.fetchText ?? defaultFetchText());
  // The host's own tools register first, so no rib can claim their names.
  registry.register(keelsonDocsTool(docs));
  const sandbox = options.sandbox ?? createSandbox({ mode: sandboxMode, hidden: [home], warn: (message) => logger.warn(message) });
  for (const tool of codingTools({ env: options.env ?? process.env, sandbox })) registry.register(tool);
  if (options.memory) for (const tool of memoryTools(options.memory)) registry.register(tool);
  for (const tool of options.hostTools ?? []) {
    const rejection = registry.register(tool);
    if (rejection) throw new Error(`host tool: ${rejection.message}`);
  }
  const events = new ManifestEvents((err) => logger.error({ err }, 'a manifest listener threw'));
  const dynamic = new DynamicRegions();
  const runEvents = new RunEventDispatcher(warn);
  return { hub, registry, policies, runner, docs, events, dynamic, runEvents };
}

/** The regions the selected ribs' well-formed surfaces declare in their layouts. */
function declaredRegionsOf(selected: readonly RibCandidate[]): SurfaceRegionRef[] {
  const declaredRegions: SurfaceRegionRef[] = [];
  for (const candidate of selected) {
    for (const surface of candidate.rib.surfaces ?? []) {
      const checked = checkSurface(candidate.rib.id, surface);
      if (!checked.ok) continue;
      for (const { slot, region } of layoutRegions(checked.value.layout)) {
        declaredRegions.push({ ribId: candidate.rib.id, surfaceId: checked.value.id, slot, region, dynamic: false });
      }
    }
  }
  return declaredRegions;
}

/** `RibContext.registerRegion` of the host: checks the surface, the region's shape and namespace, and returns its removal. */
function regionRegistrar(dynamic: DynamicRegions, events: ManifestEvents) {
  return (ribId: string, surfaceIds: ReadonlySet<string>, surfaceId: string, region: RibSurfaceRegion) => {
    if (!surfaceIds.has(surfaceId)) throw new Error(`rib '${ribId}' declares no surface '${surfaceId}'`);
    const parsed = surfaceRegionSchema.safeParse(region);
    if (!parsed.success) throw new Error(`registerRegion: malformed region: ${describeIssues(parsed.error, 'region')}`);
    if (!isInRibNamespace(ribId, parsed.data.key)) {
      throw new Error(`registerRegion: region key '${parsed.data.key}' is outside rib '${ribId}''s namespace (rib:${ribId} or rib:${ribId}:*)`);
    }
    const remove = dynamic.add(ribId, surfaceId, parsed.data);
    events.emit(ribId, 'region-registered');
    return () => {
      if (remove()) events.emit(ribId, 'region-unregistered');
    };
  };
}

/** What registration reaches besides the selected ribs. */
interface ActivationDeps {
  options: RibHostOptions;
  home: string;
  exec: RibExec;
  services: HostServices;
  grants: HostGrantSet;
  active: Map<string, ActiveRib>;
  crossDeps: CrossRibCallerDeps;
  warn: WarningSink;
  lifetime: AbortController;
}

/**
 * Registers the selected ribs in activation order: each gets its context (the host's seams, then the
 * embedder's) and joins `active`. A failure disposes the ribs already activated, ends the host's
 * lifetime and rethrows. Projects read the host as ready once every rib registered.
 */
async function activateRibs(
  selected: readonly RibCandidate[],
  surfaceIdsByRib: ReadonlyMap<string, Set<string>>,
  deps: ActivationDeps,
): Promise<{ perRibWorkflows: RibWorkflowEntry[][]; warmUps: Promise<void>[] }> {
  const { options, home, exec, active, crossDeps, warn } = deps;
  const { hub, registry, docs, policies, events, dynamic } = deps.services;
  const { crossRibGrants, denylist } = deps.grants;
  const registerRegion = regionRegistrar(dynamic, events);
  let ready = false;
  const perRibWorkflows: RibWorkflowEntry[][] = [];
  const warmUps: Promise<void>[] = [];
  try {
    for (const candidate of selected) {
      const id = candidate.rib.id;
      const surfaceIds = surfaceIdsByRib.get(id) ?? new Set<string>();
      const snapshots = createScopedSnapshotManager(hub, id, warn);
      const ctx = buildRibContext(
        exec,
        {
          getSnapshotManager: () => snapshots,
          ...(options.credentials ? { getCredential: credentialSeam(options.credentials, id) } : {}),
          getDataDir: () => join(home, `rib-${id}`),
          ...(options.projects ? projectSeams(options.projects, id, { isReady: () => ready, warn }) : {}),
          callTool: (targetRibId, name, args, opts) => callRibTool(crossDeps, id, targetRibId, name, args, opts),
          getToolReachability: (names) => (Array.isArray(names) ? toolReachability(registry, crossRibGrants, denylist, id, names) : []),
          registerRegion: (surfaceId, region) => registerRegion(id, surfaceIds, surfaceId, region),
          invalidateManifest: () => events.emit(id, 'rib-invalidated'),
        },
        // getMemory: the host's memory for this rib unless the embedder's seams bring their own.
        { ...(options.memory ? { getMemory: () => options.memory!(id) } : {}), ...options.seams?.(id) },
      );
      const entry: ActiveRib = {
        id,
        rib: candidate.rib,
        ctx,
        surfaceIds,
        ...(candidate.packageName ? { packageName: candidate.packageName } : {}),
        ...(candidate.packageDir ? { packageDir: candidate.packageDir } : {}),
      };
      active.set(id, entry);
      const registered = registerRib(entry, candidate, snapshots, { registry, hub, docs, policies, warn });
      perRibWorkflows.push(registered.workflows);
      warmUps.push(registered.warm);
    }
  } catch (err) {
    await disposeRibs([...active.values()], warn);
    deps.lifetime.abort();
    throw err;
  }
  ready = true;
  return { perRibWorkflows, warmUps };
}

/** Warns about what activation found: shadowed workflows, and regions whose refresh needs their surface open. */
function warnActivationFindings(shadowed: readonly { entry: RibWorkflowEntry; by: RibWorkflowEntry }[], declaredRegions: readonly SurfaceRegionRef[], warn: WarningSink): void {
  for (const { entry, by } of shadowed) {
    warn({ stage: 'activation', rule: 'workflow-collision', ribId: entry.ribId, message: `workflow '${entry.name}' (${entry.origin}) is shadowed by rib '${by.ribId}''s ${by.origin} entry` });
  }
  const argsOnly = declaredRegions.filter((r) => r.region.workflow && r.region.workflowArgs && r.region.serverRefresh !== false).map((r) => r.region.key);
  if (argsOnly.length > 0) {
    warn({ stage: 'activation', rule: 'refresh-args', message: `regions whose workflowArgs the heartbeat cannot supply refresh only while their surface is open: ${argsOnly.join(', ')}` });
  }
}

