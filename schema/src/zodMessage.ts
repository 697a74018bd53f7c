import type { z } from 'zod';

/** One line per issue: `<root>.<path>: <message>` (just `<root>` for the value itself). */
export function describeZodError(error: z.ZodError, root = 'input'): string {
  return error.issues
    .map((issue) => {
      const path = [root, ...issue.path.map(String)].filter(Boolean).join('.') || 'value';
      return `${path}: ${issue.message}`;
    })
    .join('; ');
}
