import { MeshError } from '@keelson/schema';
import type { z } from 'zod';

/**
 * A rib broke a rule the seed makes fatal at activation (a key outside its namespace, an id that
 * diverges from its package, a duplicate rib or surface id, a malformed descriptor, a throwing
 * activation hook). It is deliberately not caught: the server fails to boot.
 */
export class RibActivationError extends Error {
  readonly ribId: string;
  readonly rule: string;

  constructor(ribId: string, rule: string, message: string) {
    super(`rib '${ribId}': ${message}`);
    this.name = 'RibActivationError';
    this.ribId = ribId;
    this.rule = rule;
  }
}

type Issue = z.core.$ZodIssue;

/**
 * Issues with every failed union resolved to the branch that matched the value's shape (the one
 * not failing on the value's type at its root), so a message names the field that is wrong rather
 * than "Invalid input".
 */
function flatten(issues: readonly Issue[], prefix: PropertyKey[] = []): { path: PropertyKey[]; message: string }[] {
  const out: { path: PropertyKey[]; message: string }[] = [];
  for (const issue of issues) {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      const branch = issue.errors.find((b) => !(b.length === 1 && b[0]!.code === 'invalid_type' && b[0]!.path.length === 0)) ?? issue.errors[0]!;
      out.push(...flatten(branch, path));
    } else {
      out.push({ path, message: issue.message });
    }
  }
  return out;
}

/** One line per issue, `<root>.<path>: <message>`, with unions resolved to the branch that applies. */
export function describeIssues(error: z.ZodError, root: string): string {
  return flatten(error.issues)
    .map(({ path, message }) => `${[root, ...path.map(String)].filter(Boolean).join('.')}: ${message}`)
    .join('; ');
}

/** Parses `value`; a failure is a BAD_USER_INPUT `MeshError` naming each field. */
export function parseOrBadInput<S extends z.ZodType>(schema: S, value: unknown, root: string): z.infer<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new MeshError('BAD_USER_INPUT', describeIssues(result.error, root));
  return result.data;
}

/** The message of anything thrown. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'string') return err;
  try {
    return JSON.stringify(err);
  } catch {
    return String(err);
  }
}
