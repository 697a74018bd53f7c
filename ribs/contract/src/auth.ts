import { z } from 'zod';

/**
 * The result of a rib's credential probe. A probe should not throw; the host reads a throwing probe
 * as `{ authenticated: false, statusMessage: <the error> }`.
 */
export const ribAuthStatusSchema = z.strictObject({
  authenticated: z.boolean(),
  statusMessage: z.string().optional(),
});
export type RibAuthStatus = z.infer<typeof ribAuthStatusSchema>;
