import { z } from 'zod';

/** The one pattern a rib id follows: lowercase kebab-case, starting with a letter. */
export const RIB_ID_PATTERN = /^[a-z][a-z0-9-]*$/;

/**
 * A rib id: 1 to 64 characters matching `^[a-z][a-z0-9-]*$`. It crosses process boundaries
 * (`KEELSON_RIBS`, GraphQL ids, snapshot keys), so it stays URL-safe and predictable.
 */
export const ribIdSchema = z
  .string()
  .min(1, 'a rib id is 1 to 64 characters')
  .max(64, 'a rib id is 1 to 64 characters')
  .regex(RIB_ID_PATTERN, 'a rib id is lowercase kebab-case: a letter, then letters, digits or -');

/** The human-readable label of a rib: 1 to 80 characters. */
export const ribDisplayNameSchema = z
  .string()
  .min(1, 'a displayName is 1 to 80 characters')
  .max(80, 'a displayName is 1 to 80 characters');

/** Every rib package is named `@keelson/rib-<id>`. */
export const RIB_PACKAGE_PREFIX = '@keelson/rib-';

/** The npm package name of rib `id`. */
export function ribPackageName(id: string): string {
  return `${RIB_PACKAGE_PREFIX}${id}`;
}

/** The root of rib `id`'s namespace: `rib:<id>`. */
export function ribNamespace(id: string): string {
  return `rib:${id}`;
}

/** True when `key` is `rib:<ribId>` or `rib:<ribId>:<something>`. */
export function isInRibNamespace(ribId: string, key: string): boolean {
  const root = ribNamespace(ribId);
  return key === root || (key.startsWith(`${root}:`) && key.length > root.length + 1);
}

/** The rib a namespaced key belongs to, or null when the key is in no rib's namespace. */
export function ribIdFromKey(key: string): string | null {
  const match = /^rib:([a-z][a-z0-9-]*)(?::.+)?$/.exec(key);
  if (!match) return null;
  const id = match[1] as string;
  return id.length <= 64 ? id : null;
}
