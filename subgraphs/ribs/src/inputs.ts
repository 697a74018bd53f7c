import { ribIdFromKey, ribIdSchema } from '@keelson/ribs-contract';
import { z } from 'zod';

/** The edge schemas of the ribs operations (parsed with `parseInput`: a failure is BAD_USER_INPUT naming the field). */
export { ribIdSchema };

/** A namespaced snapshot key: `rib:<id>` or `rib:<id>:<name>`. */
export const snapshotKeySchema = z
  .string()
  .max(512, 'a snapshot key is at most 512 characters')
  .refine((key) => ribIdFromKey(key) !== null, { message: 'a snapshot key is rib:<id> or rib:<id>:<name>' });

/** The keys one snapshotFrames subscription follows. */
export const frameKeysSchema = z
  .array(snapshotKeySchema)
  .min(1, 'name at least one key')
  .max(64, 'at most 64 keys per subscription')
  .transform((keys) => [...new Set(keys)]);

/** Tool names a reachability pre-flight checks. */
export const toolNamesSchema = z.array(z.string().min(1).max(128)).max(200, 'at most 200 names per call');

/** A slash-command name. */
export const commandNameSchema = z.string().min(1).max(64);

/** A command argument or completion prefix. */
export const commandArgSchema = z.string().max(4000, 'is at most 4000 characters');

/** An agent slug. */
export const agentSlugSchema = z.string().min(1).max(64);
