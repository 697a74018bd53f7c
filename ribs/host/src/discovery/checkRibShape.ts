import { RIB_HOOK_NAMES, ribDisplayNameSchema, ribIdSchema } from '@keelson/ribs-contract';

/**
 * The discovery-time shape problems of a candidate rib (empty when it is well-formed): a manifest
 * key or id that is not a rib id, a bad displayName, a hook that is not a function, or a declared
 * field of the wrong type. Descriptor contents and namespaces are activation's checks.
 */
export function ribShapeProblems(key: string, value: unknown): string[] {
  try {
    return shapeProblems(key, value);
  } catch (err) {
    return [`reading the rib threw: ${err instanceof Error ? err.message : String(err)}`];
  }
}

function shapeProblems(key: string, value: unknown): string[] {
  const problems: string[] = [];
  const keyCheck = ribIdSchema.safeParse(key);
  if (!keyCheck.success) problems.push(`manifest key '${key}': ${keyCheck.error.issues[0]?.message}`);
  if (typeof value !== 'object' || value === null) return [...problems, 'the default export is not a Rib object'];
  const rib = value as Record<string, unknown>;
  const id = ribIdSchema.safeParse(rib.id);
  if (!id.success) problems.push(`id ${JSON.stringify(rib.id)}: ${id.error.issues[0]?.message}`);
  const name = ribDisplayNameSchema.safeParse(rib.displayName);
  if (!name.success) problems.push(`displayName ${JSON.stringify(rib.displayName)}: ${name.error.issues[0]?.message}`);
  for (const hook of RIB_HOOK_NAMES) {
    if (rib[hook] !== undefined && typeof rib[hook] !== 'function') problems.push(`hook '${hook}' is not a function`);
  }
  if (rib.acceptsIngest !== undefined && typeof rib.acceptsIngest !== 'boolean') problems.push('acceptsIngest is not a boolean');
  for (const field of ['views', 'surfaces'] as const) {
    if (rib[field] !== undefined && !Array.isArray(rib[field])) problems.push(`${field} is not an array`);
  }
  return problems;
}
