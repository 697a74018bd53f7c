import { MeshError } from '@keelson/schema';
import { ribIngestPayloadSchema, INGEST_ACTION_TYPE, type RibActionOrigin } from '@keelson/ribs-contract';
import { z } from 'zod';
import type { ActiveRib } from './activation/activeRib';
import { dispatchAction } from './actions/dispatchAction';
import { isRibWorkflowGranted, serializeCrossRibGrants, type CrossRibGrants, type RibWorkflowGrants } from './config/grants';
import type { DocsCatalog } from './docs/docsCatalog';
import { errorMessage, parseOrBadInput } from './errors';
import { completeRibCommand, invokeRibCommand, listRibCommands } from './hooks/commands';
import { listRibAgents, resolveRibAgent } from './hooks/agents';
import { probeAuthStatus } from './hooks/authStatus';
import { buildRibSummary, liveViews } from './manifest/buildRibSummary';
import type { DynamicRegions } from './manifest/dynamicRegions';
import type { ManifestEvents } from './manifest/manifestEvents';
import type { PolicyEngine } from './policy/policyEngine';
import type { InstalledRib, RibHost, SurfaceRegionRef } from './ribHost';
import type { RunEventDispatcher } from './runs/runEventDispatcher';
import type { SnapshotHub } from './snapshots/snapshotHub';
import { callRibTool, type CrossRibCallerDeps } from './tools/crossRibCaller';
import { toolReachability } from './tools/reachability';
import type { ToolRegistry } from './tools/toolRegistry';
import type { ToolRunner } from './tools/toolRunner';
import type { WarningSink } from './warnings';
import type { RibWorkflowEntry } from './workflows/workflowCatalog';

// The `RibHost` object `createRibHost` hands out, built from the activated host's state by method group.

const actionInput = z.strictObject({ type: z.string().min(1, 'is required').max(128, 'is at most 128 characters'), payload: z.unknown().optional() });

/** The host's shared services: the snapshot hub, the tool registry and runner, policies, docs, and the manifest's event and region books. */
export interface HostServices {
  hub: SnapshotHub;
  registry: ToolRegistry;
  policies: PolicyEngine;
  runner: ToolRunner;
  docs: DocsCatalog;
  events: ManifestEvents;
  dynamic: DynamicRegions;
  runEvents: RunEventDispatcher;
}

/** The operator grants and denylist the host resolved from its config file and environment. */
export interface HostGrantSet {
  crossRibGrants: CrossRibGrants;
  workflowGrants: RibWorkflowGrants;
  approvalGrants: RibWorkflowGrants;
  denylist: ReadonlySet<string>;
}

/** Everything the `RibHost` object's methods reach once activation is done. */
export interface HostState extends HostServices, HostGrantSet {
  active: Map<string, ActiveRib>;
  crossDeps: CrossRibCallerDeps;
  declaredRegions: SurfaceRegionRef[];
  installed: InstalledRib[];
  workflows: RibWorkflowEntry[];
  warmUps: Promise<void>[];
  callTimeoutMs: number;
  authTimeout: number;
  warn: WarningSink;
  lifetime: AbortController;
}

/** The active rib `ribId`, or NOT_FOUND. */
function needRib(active: ReadonlyMap<string, ActiveRib>, ribId: string): ActiveRib {
  const entry = active.get(ribId);
  if (!entry) throw new MeshError('NOT_FOUND', `no active rib '${ribId}'`);
  return entry;
}

/** The `RibHost` object over the activated state: its method groups in order, then `dispose`. */
export function ribHostObject(state: HostState): RibHost {
  let disposed: Promise<void> | undefined;
  return {
    ...ribViewMethods(state),
    ...ribActionMethods(state),
    ...toolMethods(state),
    ...runtimeMethods(state),
    dispose() {
      disposed ??= (async () => {
        state.lifetime.abort();
        await disposeRibs([...state.active.values()], state.warn);
      })();
      return disposed;
    },
  };
}

/** The host's read side of its ribs: ids, installs, contexts, the manifest and surface regions. */
function ribViewMethods(state: HostState): Pick<RibHost, 'ribIds' | 'installed' | 'rib' | 'context' | 'manifest' | 'ribSummary' | 'onManifestInvalidated' | 'surfaceRegions'> {
  const { active, registry, dynamic, warn, declaredRegions } = state;
  const probe = (entry: ActiveRib) => probeAuthStatus(entry, state.authTimeout);
  return {
    ribIds: [...active.keys()],
    installed: () => state.installed.map((r) => ({ ...r })),
    rib: (id) => active.get(id)?.rib,
    context: (id) => active.get(id)?.ctx,

    async manifest() {
      const ribs = await Promise.all([...active.values()].map((entry) => buildRibSummary(entry, { registry, dynamic, warn, probe })));
      return { ribs, crossRibGrants: serializeCrossRibGrants(state.crossRibGrants) };
    },
    async ribSummary(id) {
      const entry = active.get(id);
      return entry ? buildRibSummary(entry, { registry, dynamic, warn, probe }) : undefined;
    },
    onManifestInvalidated: (listener) => state.events.on(listener),
    surfaceRegions: () => [
      ...declaredRegions,
      ...dynamic.all().map((r) => ({ ribId: r.ribId, surfaceId: r.surfaceId, slot: 'row' as const, region: r.region, dynamic: true })),
    ],
  };
}

/** What the host asks of its ribs: actions, ingest, agents, commands and auth status. */
function ribActionMethods(
  state: HostState,
): Pick<RibHost, 'ribAction' | 'canvasAction' | 'ingest' | 'agents' | 'resolveAgent' | 'commands' | 'invokeCommand' | 'completeCommand' | 'authStatus'> {
  const { active, warn } = state;
  const need = (ribId: string) => needRib(active, ribId);
  const probe = (entry: ActiveRib) => probeAuthStatus(entry, state.authTimeout);
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
  return {
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
  };
}

/** The host's tools: listing, input schemas, execution and cross-rib calls. */
function toolMethods(state: HostState): Pick<RibHost, 'tools' | 'tool' | 'toolInputSchema' | 'executeTool' | 'callTool' | 'toolReachability'> {
  const { registry, runner, crossDeps } = state;
  return {
    tools: () => registry.list(),
    tool: (name) => registry.list().find((t) => t.name === name),
    toolInputSchema: (name) => {
      const tool = registry.get(name);
      return tool ? inputJsonSchema(tool.definition.inputSchema) : undefined;
    },
    executeTool: (req) => runner.run(req),
    callTool: async (callerRibId, targetRibId, name, args, opts) => {
      needRib(state.active, callerRibId);
      return callRibTool(crossDeps, callerRibId, targetRibId, name, args, opts);
    },
    toolReachability: (ribId, names) => {
      needRib(state.active, ribId);
      return toolReachability(registry, state.crossRibGrants, state.denylist, ribId, names);
    },
  };
}

/** The host's runtime side: snapshots, docs, policies, grants, workflows and run events. */
function runtimeMethods(
  state: HostState,
): Pick<RibHost, 'recomposeSnapshot' | 'readSnapshot' | 'snapshotKeys' | 'whenWarm' | 'docs' | 'policies' | 'grants' | 'workflows' | 'deliverRunEvent'> {
  const { hub, crossRibGrants, workflowGrants, approvalGrants } = state;
  return {
    recomposeSnapshot: (key) => hub.recompose(key),
    readSnapshot: (key) => hub.read(key),
    snapshotKeys: () => hub.keys(),
    whenWarm: () => Promise.all(state.warmUps).then(() => undefined),

    docs: state.docs,
    policies: state.policies,
    grants: {
      crossRib: () => serializeCrossRibGrants(crossRibGrants),
      canStartWorkflow: (ribId, name) => isRibWorkflowGranted(workflowGrants, ribId, name),
      canAnswerGates: (ribId, name) => isRibWorkflowGranted(approvalGrants, ribId, name),
      callTimeoutMs: state.callTimeoutMs,
    },
    workflows: () => [...state.workflows],
    deliverRunEvent: async (ribId, event) => state.runEvents.deliver(needRib(state.active, ribId), event),
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
export async function disposeRibs(ribs: readonly ActiveRib[], warn: WarningSink): Promise<void> {
  for (const entry of [...ribs].reverse()) {
    if (typeof entry.rib.dispose !== 'function') continue;
    try {
      await entry.rib.dispose();
    } catch (err) {
      warn({ stage: 'runtime', rule: 'dispose', ribId: entry.id, message: `dispose threw: ${errorMessage(err)}` });
    }
  }
}
