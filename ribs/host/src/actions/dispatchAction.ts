import { MeshError } from '@keelson/schema';
import {
  CANVAS_REPLY_EFFECTS,
  ribActionResultSchema,
  type CanvasKind,
  type RibActionOrigin,
  type RibActionResult,
} from '@keelson/ribs-contract';
import type { ActiveRib } from '../activation/activeRib';
import { errorMessage } from '../errors';
import type { WarningSink } from '../warnings';
import { normalizePlacement, readEffect } from './effects';

/** What dispatching needs from the host. */
export interface ActionDeps {
  warn: WarningSink;
  /** The canvas kind a view declares for a key, across every rib. */
  canvasKindOf: (key: string) => CanvasKind | undefined;
}

/**
 * Dispatches `{ type, payload }` to a rib's `onAction` with the host-stamped `origin`, then vets
 * the reply: a malformed result or a throwing handler reads as `{ ok: false }`; an unknown or
 * malformed effect rejects the result; a `canvas-html` reply keeps only `open-canvas` / `open-chat`
 * (any other effect is dropped and warned about).
 */
export async function dispatchAction(
  active: ActiveRib,
  action: { type: string; payload?: unknown },
  origin: RibActionOrigin,
  deps: ActionDeps,
): Promise<RibActionResult> {
  const { rib, ctx, id } = active;
  if (typeof rib.onAction !== 'function') throw new MeshError('CAPABILITY_UNSUPPORTED', `rib '${id}' handles no actions`);
  let raw: unknown;
  try {
    raw = await rib.onAction({ type: action.type, ...(action.payload !== undefined ? { payload: action.payload } : {}), origin }, ctx);
  } catch (err) {
    deps.warn({ stage: 'runtime', rule: 'action-failed', ribId: id, message: `onAction('${action.type}') threw: ${errorMessage(err)}` });
    return { ok: false, error: `action '${action.type}' failed: ${errorMessage(err)}` };
  }
  const parsed = ribActionResultSchema.safeParse(raw);
  if (!parsed.success) {
    deps.warn({ stage: 'runtime', rule: 'action-result', ribId: id, message: `onAction('${action.type}') returned a malformed result` });
    return { ok: false, error: `rib '${id}' returned a malformed result for '${action.type}'` };
  }
  const result = parsed.data;
  if (!result.ok) return result;
  const read = readEffect(result.data);
  if (read.kind === 'none') return result;
  if (read.kind === 'invalid') {
    deps.warn({ stage: 'runtime', rule: 'effect', ribId: id, message: `onAction('${action.type}'): ${read.error}` });
    return { ok: false, error: read.error };
  }
  if (origin === 'canvas-html' && !CANVAS_REPLY_EFFECTS.includes(read.effect.effect)) {
    deps.warn({
      stage: 'runtime',
      rule: 'canvas-effect',
      ribId: id,
      message: `dropped '${read.effect.effect}' from the reply to canvas action '${action.type}' (a canvas reply may carry only ${CANVAS_REPLY_EFFECTS.join(' or ')})`,
    });
    return { ok: true };
  }
  return { ok: true, data: normalizePlacement(read.effect, deps.canvasKindOf) };
}
