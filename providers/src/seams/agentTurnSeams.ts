import { describeZodError } from '@keelson/schema';
import type { RibAgentTurn, RibAgentTurnRequest, RibContext } from '@keelson/ribs-contract';
import { z } from 'zod';
import { runAgentTurn, type AgentTurnDeps } from '../turn/runAgentTurn';

/** The seams of a rib's context this package implements (plugged through `RibHostOptions.seams`). */
export type AgentTurnSeams = Required<Pick<RibContext, 'runAgentTurn' | 'getProviders'>>;

const names = z.array(z.string().min(1).max(128)).max(200).readonly();
const classes = ['fast', 'balanced', 'deep'] as const;
const efforts = ['none', 'low', 'medium', 'high', 'xhigh'] as const;

/** A rib's turn request, checked once at the seam (a rib is in-process, but its input is still input). */
const ribTurnRequestSchema = z.object({
  prompt: z.string().min(1, 'must not be empty'),
  system: z.string().optional(),
  provider: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  modelClass: z.enum(classes).optional(),
  reasoningEffort: z.enum(efforts).optional(),
  tools: names.optional(),
  allowedTools: names.optional(),
  disallowedTools: names.optional(),
  abortSignal: z.custom<AbortSignal>((v) => v instanceof AbortSignal, 'expected an AbortSignal').optional(),
  timeoutMs: z.number().int().positive().optional(),
  cwd: z.string().min(1).optional(),
  allowedDirectories: z.array(z.string().min(1)).readonly().optional(),
  resumeSessionId: z.string().min(1).optional(),
  turnContext: z.record(z.string(), z.unknown()).readonly().optional(),
});

/** A turn that failed before it started: still a settled dual handle, never a throw. */
function refused(message: string): RibAgentTurn {
  const result = { status: 'error' as const, text: '', error: message, stopReason: 'error' as const };
  return {
    result: Promise.resolve(result),
    stream: (async function* () {
      yield { type: 'error' as const, message };
      yield { type: 'done' as const, stopReason: 'error' as const };
    })(),
  };
}

/**
 * `runAgentTurn` and `getProviders` for each rib: turns run under the rib's id (its tools' caller, the
 * owner of its ledger rows and sessions) on the rib surface; the provider list is the registry's
 * snapshot at call time. Use it as (part of) the host's `seams` option:
 *
 * ```ts
 * const turns = createAgentTurns({ home, env, db, host: () => host });
 * const host = await createRibHost({ seams: (ribId) => ({ ...turns.seams(ribId), ...runSeams(ribId) }) });
 * ```
 */
export function createAgentTurnSeams(deps: AgentTurnDeps): (ribId: string) => AgentTurnSeams {
  return (ribId) => ({
    runAgentTurn(req: RibAgentTurnRequest): RibAgentTurn {
      const parsed = ribTurnRequestSchema.safeParse(req);
      if (!parsed.success) return refused(`invalid turn request: ${describeZodError(parsed.error, 'req')}`);
      // turnContext is forwarded verbatim (the same object), not the parsed copy.
      return runAgentTurn(deps, { ...parsed.data, ...(req.turnContext ? { turnContext: req.turnContext } : {}), ribId, surface: 'rib' });
    },
    getProviders: () => deps.registry.info(),
  });
}
