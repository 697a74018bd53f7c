import type { Scope } from '@keelson/schema';
import { Directive } from 'type-graphql';

/**
 * Declares the scope a root field needs, as federation's `@requiresScopes`, so it composes into the
 * supergraph where the gateway enforces it before planning (README "Security", schema/PROTOCOL.md).
 */
export function RequiresScope(scope: Scope): MethodDecorator & PropertyDecorator {
  return Directive(`@requiresScopes(scopes: [["${scope}"]])`) as MethodDecorator & PropertyDecorator;
}

/** Declares that a root field needs an authenticated caller and nothing more (federation's `@authenticated`). */
export function Authenticated(): MethodDecorator & PropertyDecorator {
  return Directive('@authenticated') as MethodDecorator & PropertyDecorator;
}
