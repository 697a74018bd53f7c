import type { RibActionResult, RibAction } from './actions';
import type { AgentSummary, OpenChatSeed } from './agents';
import type { RibAuthStatus } from './auth';
import type { CommandCompletion, CommandInvokeResult, RibCommandDescriptor } from './commands';
import type { RibContext } from './context';
import type { RibDocsSource } from './docs';
import type { Policy } from './policy';
import type { RibRunEvent } from './runs';
import type { RibSurfaceDescriptor } from './surfaces';
import type { ToolDefinition } from './tools';
import type { RibViewDescriptor } from './views';
import type { RibWorkflowContribution } from './workflows';

/**
 * The harness's one extension point. A rib package (`@keelson/rib-<id>`) default-exports one object
 * implementing it. Only `id` and `displayName` are required; every hook is optional.
 */
export interface Rib {
  /** Lowercase kebab-case, matching the package suffix (`@keelson/rib-demo` has id `demo`). */
  id: string;
  /** 1 to 80 characters. */
  displayName: string;
  /** The rib's tools for the shared registry; names are global (a collision is skipped with a warning). */
  registerTools?(ctx: RibContext): readonly ToolDefinition[];
  /** The composer registered under `rib.id` after `registerTools`; invoked lazily on recompose. */
  composeBundle?(ctx: RibContext): Promise<unknown>;
  /** Views binding namespaced keys to canvas renderers; re-read per manifest request. */
  views?: readonly RibViewDescriptor[];
  /** Primary nav tabs laying out region-bound boards; re-read per manifest request. */
  surfaces?: readonly RibSurfaceDescriptor[];
  /** Advertises that the rib handles the conventional `ingest` action. */
  acceptsIngest?: boolean;
  /** Workflows merged into the catalog at activation. */
  contributeWorkflows?(ctx: RibContext): readonly RibWorkflowContribution[];
  /** Docs sources for the `keelson_docs` tool, collected once at activation. */
  contributeDocs?(ctx: RibContext): readonly RibDocsSource[];
  /** Governance policies composed with the host's builtins, collected once at activation. */
  contributePolicies?(ctx: RibContext): readonly Policy[];
  /** Handles inbound actions; `action.origin` is stamped by the host. */
  onAction?(action: RibAction, ctx: RibContext): Promise<RibActionResult> | RibActionResult;
  /** Run-lifecycle notifications; fail-soft, serialized per run. */
  onRunEvent?(event: RibRunEvent, ctx: RibContext): void | Promise<void>;
  /** Named chat agents (cheap). */
  listAgents?(ctx: RibContext): readonly AgentSummary[] | Promise<readonly AgentSummary[]>;
  /** Builds one agent's chat seed; null for an unknown slug. */
  resolveAgent?(slug: string, ctx: RibContext): OpenChatSeed | null | Promise<OpenChatSeed | null>;
  /** Slash commands (static descriptors). */
  listCommands?(ctx: RibContext): readonly RibCommandDescriptor[] | Promise<readonly RibCommandDescriptor[]>;
  /** A side-effect-free resolver of the closed effect the surface performs. */
  invokeCommand?(name: string, arg: string, ctx: RibContext): CommandInvokeResult | Promise<CommandInvokeResult>;
  /** Argument type-ahead; the full candidate set for an empty prefix. */
  completeCommand?(name: string, prefix: string, ctx: RibContext): readonly CommandCompletion[] | Promise<readonly CommandCompletion[]>;
  /** A credential probe; should not throw. */
  authStatus?(ctx: RibContext): Promise<RibAuthStatus> | RibAuthStatus;
  /** Teardown, awaited at shutdown before the database closes. */
  dispose?(): void | Promise<void>;
}

/** Every optional hook of `Rib` that must be a function when present. */
export const RIB_HOOK_NAMES = [
  'registerTools',
  'composeBundle',
  'contributeWorkflows',
  'contributeDocs',
  'contributePolicies',
  'onAction',
  'onRunEvent',
  'listAgents',
  'resolveAgent',
  'listCommands',
  'invokeCommand',
  'completeCommand',
  'authStatus',
  'dispose',
] as const satisfies readonly (keyof Rib)[];
export type RibHookName = (typeof RIB_HOOK_NAMES)[number];
