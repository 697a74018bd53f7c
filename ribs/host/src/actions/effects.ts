import { describeZodError } from '@keelson/schema';
import { RIB_CLIENT_EFFECTS, ribClientEffectSchema, type CanvasKind, type RibClientEffect } from '@keelson/ribs-contract';

/** What an action result's `data` holds, effect-wise. */
export type EffectRead = { kind: 'none' } | { kind: 'effect'; effect: RibClientEffect } | { kind: 'invalid'; error: string };

/**
 * Reads a client effect from an action result's `data`: any object with an `effect` field must be
 * one of the recognized effects, well-formed; anything else is plain data.
 */
export function readEffect(data: unknown): EffectRead {
  if (typeof data !== 'object' || data === null || Array.isArray(data) || !('effect' in data)) return { kind: 'none' };
  const name = (data as { effect: unknown }).effect;
  if (typeof name !== 'string' || !(RIB_CLIENT_EFFECTS as readonly string[]).includes(name)) {
    return { kind: 'invalid', error: `unrecognized effect ${JSON.stringify(name)} (expected one of ${RIB_CLIENT_EFFECTS.join(', ')})` };
  }
  const parsed = ribClientEffectSchema.safeParse(data);
  if (!parsed.success) return { kind: 'invalid', error: `malformed '${name}' effect: ${describeZodError(parsed.error, 'data')}` };
  return { kind: 'effect', effect: parsed.data };
}

/**
 * Applies the placement rule: `side` docks only a structured `view` document; html, markdown and
 * log documents always open centered. A key no view declares keeps what the rib asked for.
 */
export function normalizePlacement(effect: RibClientEffect, canvasKindOf: (key: string) => CanvasKind | undefined): RibClientEffect {
  if (effect.effect !== 'open-canvas' || effect.placement !== 'side') return effect;
  const kind = canvasKindOf(effect.key);
  return kind !== undefined && kind !== 'view' ? { ...effect, placement: 'center' } : effect;
}
