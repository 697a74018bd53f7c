import type { RibContext, RibExec } from '@keelson/ribs-contract';

/** The run-time seams the runs issue implements, plugged per rib through `RibHostOptions.seams`. */
export type RibRunSeams = Pick<
  RibContext,
  | 'runAgentTurn'
  | 'refreshWorkflow'
  | 'runWorkflow'
  | 'startWorkflow'
  | 'getRunStatus'
  | 'cancelRun'
  | 'respondToRun'
  | 'registerOp'
  | 'getMemory'
  | 'getProviders'
  | 'getSidecar'
>;

/** The host-owned seams of one rib's context; an absent one is left off the context. */
export type HostSeams = Omit<RibContext, keyof RibRunSeams | 'getExec'>;

/**
 * One rib's context: `getExec` always, the host-owned seams it was given, then the run seams the
 * embedder plugs in (which cannot replace a host-owned seam). Absent seams are absent keys, so a rib
 * testing `ctx.x` fails closed. Frozen: a rib cannot swap a seam out from under itself.
 */
export function buildRibContext(exec: RibExec, host: HostSeams, run: Partial<RibRunSeams> = {}): RibContext {
  const ctx: Record<string, unknown> = { getExec: () => exec };
  for (const [name, seam] of Object.entries(run)) if (typeof seam === 'function') ctx[name] = seam;
  for (const [name, seam] of Object.entries(host)) if (typeof seam === 'function') ctx[name] = seam;
  return Object.freeze(ctx) as unknown as RibContext;
}
