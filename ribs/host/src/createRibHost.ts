import { join } from 'node:path';
import { createSandbox } from '@keelson/platform';
import { MeshError } from '@keelson/schema';
import { createLogger } from '@keelson/service';
import {
  isInRibNamespace,
  layoutRegions,
  ribIngestPayloadSchema,
  surfaceRegionSchema,
  INGEST_ACTION_TYPE,
  type RibActionOrigin,
  type RibSurfaceRegion,
} from '@keelson/ribs-contract';
import { z } from 'zod';
import type { ActiveRib } from './activation/activeRib';
import { applyRibFilter } from './activation/ribFilter';
import { registerRib } from './activation/registerRib';
import { validateActivation } from './activation/validateActivation';
import { dispatchAction } from './actions/dispatchAction';
import { fileConfigPort } from './config/fileConfigPort';
import { isRibWorkflowGranted, resolveCrossRibGrants, resolveRibWorkflowGrants, serializeCrossRibGrants } from './config/grants';
import { parseHostEnv } from './config/hostEnv';
import { codingTools } from './builtins/codingTools';
import { memoryTools } from './builtins/memoryTools';
import { buildRibContext } from './context/buildRibContext';
import { credentialSeam } from './credentials/credentialSeam';
import { collectCandidates } from './discovery/collectCandidates';
import { defaultNodeModulesRoots } from './discovery/discoverInstalledRibs';
import { DocsCatalog, defaultFetchText } from './docs/docsCatalog';
import { keelsonDocsTool } from './docs/keelsonDocsTool';
import { describeIssues, errorMessage, parseOrBadInput } from './errors';
import { createExec } from './exec/createExec';
import { completeRibCommand, invokeRibCommand, listRibCommands } from './hooks/commands';
import { listRibAgents, resolveRibAgent } from './hooks/agents';
import { AUTH_PROBE_TIMEOUT_MS, probeAuthStatus } from './hooks/authStatus';
import { checkSurface } from './manifest/descriptorChecks';
import { buildRibSummary, liveViews } from './manifest/buildRibSummary';
import { DynamicRegions } from './manifest/dynamicRegions';
import { ManifestEvents } from './manifest/manifestEvents';
import { InMemorySnapshotStore } from './memory/inMemorySnapshotStore';
import { pathConfinementPolicy } from './policy/pathConfinement';
import { PolicyEngine } from './policy/policyEngine';
import { projectSeams } from './projects/projectSeams';
import type { InstalledRib, RibHost, RibHostOptions, SurfaceRegionRef } from './ribHost';
import { RunEventDispatcher } from './runs/runEventDispatcher';
import { createScopedSnapshotManager } from './snapshots/scopedSnapshotManager';
import { SnapshotHub } from './snapshots/snapshotHub';
import { callRibTool, type CrossRibCallerDeps } from './tools/crossRibCaller';
import { toolReachability } from './tools/reachability';
import { ToolRegistry } from './tools/toolRegistry';
import { ToolRunner } from './tools/toolRunner';
import { createWarningSink } from './warnings';
import { mergeRibWorkflows, type RibWorkflowEntry } from './workflows/workflowCatalog';

const actionInput = z.strictObject({ type: z.string().min(1, 'is required').max(128, 'is at most 128 characters'), payload: z.unknown().optional() });

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
  const crossRibGrants = resolveCrossRibGrants(config, hostEnv.crossRibGrants, warn);
  const workflowGrants = resolveRibWorkflowGrants(config.ribWorkflowGrants, 'KEELSON_RIB_WORKFLOW_GRANTS', hostEnv.ribWorkflowGrants, warn);
  const approvalGrants = resolveRibWorkflowGrants(config.ribApprovalGrants, 'KEELSON_RIB_APPROVAL_GRANTS', hostEnv.ribApprovalGrants, warn);
  const denylist = new Set(config.toolDenylist ?? []);

  const hub = new SnapshotHub(options.snapshotStore ?? new InMemorySnapshotStore(), warn);
  const registry = new ToolRegistry();
  const policies = new PolicyEngine(warn, options.approvals);
  policies.add(pathConfinementPolicy(), 'builtin');
  for (const policy of options.builtinPolicies ?? []) {
    if (!policy.id.startsWith('builtin:')) throw new Error(`host policy '${policy.id}' must be named builtin:<name>`);
    policies.add(policy, 'builtin');
  }
  const runner = new ToolRunner(registry, policies, home, lifetime.signal, options.audit);
  const docs = new DocsCatalog(options.fetchText ?? defaultFetchText());
  // The host's own tools register first, so no rib can claim their names.
  registry.register(keelsonDocsTool(docs));
  const sandbox = options.sandbox ?? createSandbox({ mode: hostEnv.sandbox, hidden: [home], warn: (message) => logger.warn(message) });
  for (const tool of codingTools({ env: options.env ?? process.env, sandbox })) registry.register(tool);
  if (options.memory) for (const tool of memoryTools(options.memory)) registry.register(tool);
  for (const tool of options.hostTools ?? []) {
    const rejection = registry.register(tool);
    if (rejection) throw new Error(`host tool: ${rejection.message}`);
  }
  const events = new ManifestEvents((err) => logger.error({ err }, 'a manifest listener threw'));
  const dynamic = new DynamicRegions();
  const runEvents = new RunEventDispatcher(warn);
  const authTimeout = options.authProbeTimeoutMs ?? AUTH_PROBE_TIMEOUT_MS;

  const active = new Map<string, ActiveRib>();
  let ready = false;
  const crossDeps: CrossRibCallerDeps = {
    registry,
    runner,
    grants: () => crossRibGrants,
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

  const registerRegion = (ribId: string, surfaceIds: ReadonlySet<string>, surfaceId: string, region: RibSurfaceRegion) => {
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

  // 4. Registration, in activation order.
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
    lifetime.abort();
    throw err;
  }
  ready = true;

  const merged = mergeRibWorkflows(perRibWorkflows);
  for (const { entry, by } of merged.shadowed) {
    warn({ stage: 'activation', rule: 'workflow-collision', ribId: entry.ribId, message: `workflow '${entry.name}' (${entry.origin}) is shadowed by rib '${by.ribId}''s ${by.origin} entry` });
  }
  const argsOnly = declaredRegions.filter((r) => r.region.workflow && r.region.workflowArgs && r.region.serverRefresh !== false).map((r) => r.region.key);
  if (argsOnly.length > 0) {
    warn({ stage: 'activation', rule: 'refresh-args', message: `regions whose workflowArgs the heartbeat cannot supply refresh only while their surface is open: ${argsOnly.join(', ')}` });
  }

  const installed: InstalledRib[] = candidates.map((c) => ({
    id: c.key,
    source: c.source,
    active: active.get(c.rib.id)?.rib === c.rib,
    ...(c.packageName ? { packageName: c.packageName } : {}),
    ...(c.packageDir ? { packageDir: c.packageDir } : {}),
  }));

  const need = (ribId: string): ActiveRib => {
    const entry = active.get(ribId);
    if (!entry) throw new MeshError('NOT_FOUND', `no active rib '${ribId}'`);
    return entry;
  };
  const probe = (entry: ActiveRib) => probeAuthStatus(entry, authTimeout);
  const canvasKindOf = (key: string) => {
    for (const entry of active.values()) {
      const view = liveViews(entry).find((v) => v.key === key);
      if (view) return view.canvasKind;
    }
    return undefined;
  };
  const act = async (ribId: string, type: string, payload: unknown, origin: RibActionOrigin) => {
    const entry = need(ribId);
    const action = parseOrBadInput(actionInput, { type, ...(payload !== undefined ? { payload } : {}) }, 'action');
    return dispatchAction(entry, action, origin, { warn, canvasKindOf });
  };
  const each = async <T>(ribId: string | undefined, run: (entry: ActiveRib) => Promise<T[]>) =>
    (await Promise.all((ribId === undefined ? [...active.values()] : [need(ribId)]).map(run))).flat();

  let disposed: Promise<void> | undefined;
  return {
    ribIds: [...active.keys()],
    installed: () => installed.map((r) => ({ ...r })),
    rib: (id) => active.get(id)?.rib,
    context: (id) => active.get(id)?.ctx,

    async manifest() {
      const ribs = await Promise.all([...active.values()].map((entry) => buildRibSummary(entry, { registry, dynamic, warn, probe })));
      return { ribs, crossRibGrants: serializeCrossRibGrants(crossRibGrants) };
    },
    async ribSummary(id) {
      const entry = active.get(id);
      return entry ? buildRibSummary(entry, { registry, dynamic, warn, probe }) : undefined;
    },
    onManifestInvalidated: (listener) => events.on(listener),
    surfaceRegions: () => [
      ...declaredRegions,
      ...dynamic.all().map((r) => ({ ribId: r.ribId, surfaceId: r.surfaceId, slot: 'row' as const, region: r.region, dynamic: true })),
    ],

    ribAction: (ribId, type, payload) => act(ribId, type, payload, 'board'),
    canvasAction: (ribId, type, payload) => act(ribId, type, payload, 'canvas-html'),
    async ingest(ribId, payload) {
      const entry = need(ribId);
      if (entry.rib.acceptsIngest !== true) throw new MeshError('CAPABILITY_UNSUPPORTED', `rib '${ribId}' does not accept ingest`);
      const parsed = parseOrBadInput(ribIngestPayloadSchema, payload, 'ingest');
      return dispatchAction(entry, { type: INGEST_ACTION_TYPE, payload: parsed }, 'board', { warn, canvasKindOf });
    },

    agents: (ribId) => each(ribId, (entry) => listRibAgents(entry, warn)),
    resolveAgent: async (ribId, slug) => resolveRibAgent(need(ribId), slug, warn),
    commands: (ribId) => each(ribId, (entry) => listRibCommands(entry, warn)),
    invokeCommand: async (ribId, name, arg) => invokeRibCommand(need(ribId), name, arg, warn),
    completeCommand: async (ribId, name, prefix) => completeRibCommand(need(ribId), name, prefix, warn),
    authStatus: async (ribId) => probe(need(ribId)),

    tools: () => registry.list(),
    tool: (name) => registry.list().find((t) => t.name === name),
    toolInputSchema: (name) => {
      const tool = registry.get(name);
      return tool ? inputJsonSchema(tool.definition.inputSchema) : undefined;
    },
    executeTool: (req) => runner.run(req),
    callTool: async (callerRibId, targetRibId, name, args, opts) => {
      need(callerRibId);
      return callRibTool(crossDeps, callerRibId, targetRibId, name, args, opts);
    },
    toolReachability: (ribId, names) => {
      need(ribId);
      return toolReachability(registry, crossRibGrants, denylist, ribId, names);
    },

    recomposeSnapshot: (key) => hub.recompose(key),
    readSnapshot: (key) => hub.read(key),
    snapshotKeys: () => hub.keys(),
    whenWarm: () => Promise.all(warmUps).then(() => undefined),

    docs,
    policies,
    grants: {
      crossRib: () => serializeCrossRibGrants(crossRibGrants),
      canStartWorkflow: (ribId, name) => isRibWorkflowGranted(workflowGrants, ribId, name),
      canAnswerGates: (ribId, name) => isRibWorkflowGranted(approvalGrants, ribId, name),
      callTimeoutMs: hostEnv.crossRibCallTimeoutMs,
    },
    workflows: () => [...merged.entries],
    deliverRunEvent: async (ribId, event) => runEvents.deliver(need(ribId), event),

    dispose() {
      disposed ??= (async () => {
        lifetime.abort();
        await disposeRibs([...active.values()], warn);
      })();
      return disposed;
    },
  };
}

/** A tool's zod input as JSON Schema; a schema zod cannot express (a transform, say) reads as any object. */
function inputJsonSchema(schema: z.ZodType): Record<string, unknown> {
  try {
    const { $schema: _drop, ...json } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
    return json.type === 'object' ? json : { type: 'object', properties: {} };
  } catch {
    return { type: 'object', properties: {} };
  }
}

/** Awaits each rib's `dispose`, last activated first; a failing one is warned about, the rest still run. */
async function disposeRibs(ribs: readonly ActiveRib[], warn: ReturnType<typeof createWarningSink>): Promise<void> {
  for (const entry of [...ribs].reverse()) {
    if (typeof entry.rib.dispose !== 'function') continue;
    try {
      await entry.rib.dispose();
    } catch (err) {
      warn({ stage: 'runtime', rule: 'dispose', ribId: entry.id, message: `dispose threw: ${errorMessage(err)}` });
    }
  }
}

