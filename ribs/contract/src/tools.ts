import { z } from 'zod';
import type { MessageChunk } from './chunks';

/** Tool names reach provider SDKs verbatim: 1 to 64 of a-z A-Z 0-9 _ -. */
export const toolNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, 'a tool name is 1 to 64 characters of letters, digits, _ and -');

/**
 * What a tool's `execute` receives. Check `abortSignal.aborted` at every meaningful await.
 */
export interface ToolContext {
  /** The working directory of the turn (or the host's neutral directory). */
  cwd: string;
  /**
   * The turn's confinement roots (`allowedDirectories`); absent when the turn is unconfined. A tool
   * that touches files keeps to them: `builtin:path_confinement` checks only path-named arguments.
   */
  allowedDirectories?: readonly string[];
  /** Emits a chunk; results travel as `tool_result` chunks. */
  emit(chunk: MessageChunk): void;
  abortSignal: AbortSignal;
  /** The rib whose turn (or cross-rib call) runs the tool, when a rib does. */
  callerRibId?: string;
  /** Forwarded verbatim from the turn request; interpreted only by the calling rib. */
  turnContext?: Readonly<Record<string, unknown>>;
  /**
   * Who the turn runs for (the caller that started the run, or the request): a tool that reaches
   * another mesh service acts as this caller, never with more scopes. Absent when nobody is known.
   */
  caller?: Readonly<ToolCaller>;
}

/** A turn's originating caller, as the mesh's assertions name one. */
export interface ToolCaller {
  subject: string;
  kind: 'token' | 'jwt' | 'service';
  scopes: readonly ('read' | 'write' | 'operate' | 'admin')[];
  tokenId?: string;
}

/**
 * A tool a rib registers. `execute` returns nothing and emits its result as `tool_result` chunks;
 * emit one with `isError: true` rather than throwing. `inputSchema` is parsed before `execute` runs.
 * `state_changing` / `requires_confirmation` are advisory metadata for UI gates and reviewers.
 */
export interface ToolDefinition<I = unknown> {
  /** Global across ribs: prefix it with a family (`demo_ping` has family `demo`). */
  name: string;
  description: string;
  inputSchema: z.ZodType<I>;
  state_changing?: boolean;
  requires_confirmation?: boolean;
  execute(input: I, ctx: ToolContext): Promise<void> | void;
}

/** The family bucket of a tool without an underscore (or with a leading one). */
export const OTHER_TOOL_FAMILY = 'other';

/** A tool's family: the text before its first underscore (`other` when there is none). */
export function toolFamily(name: string): string {
  const at = name.indexOf('_');
  return at <= 0 ? OTHER_TOOL_FAMILY : name.slice(0, at);
}

/** A registered tool as listings show it. `ownerRibId` is absent for the host's own tools. */
export interface RegisteredToolInfo {
  name: string;
  description: string;
  family: string;
  ownerRibId?: string;
  state_changing: boolean;
  requires_confirmation: boolean;
}
