import { crossRibGrantsSchema } from '@keelson/ribs-contract';
import { z } from 'zod';

const grantedNames = z.array(z.string().min(1)).min(1, 'a grant names at least one workflow (or *)');

const classMapSchema = z.strictObject({ fast: z.string().min(1).optional(), balanced: z.string().min(1).optional(), deep: z.string().min(1).optional() });

/**
 * The operator's `<KEELSON_HOME>/config.json` (or `.yaml`): the grants the rib host reads, and the
 * providers and model classes `@keelson/providers` reads. Other keys pass through untouched.
 */
export const keelsonConfigSchema = z.looseObject({
  /** caller rib → target rib → tool names (`*` = all); unioned with `KEELSON_CROSS_RIB_GRANTS`. */
  crossRibGrants: crossRibGrantsSchema.optional(),
  /** rib → workflow names it may start (`*` = all); unioned with `KEELSON_RIB_WORKFLOW_GRANTS`. */
  ribWorkflowGrants: z.record(z.string().min(1), grantedNames).optional(),
  /** rib → workflow names whose gates it may answer; unioned with `KEELSON_RIB_APPROVAL_GRANTS`. */
  ribApprovalGrants: z.record(z.string().min(1), grantedNames).optional(),
  /** provider id → model per class. */
  modelClasses: z.record(z.string().min(1), classMapSchema).optional(),
  /**
   * provider id → settings. `@keelson/providers` validates each entry on its own (a bad one is skipped
   * with a warning), so a provider typo never costs the grants above.
   */
  providers: z.record(z.string(), z.unknown()).optional(),
  /** The provider turns use when they name none (`KEELSON_DEFAULT_PROVIDER` wins); read by `@keelson/providers`. */
  defaultProvider: z.unknown().optional(),
  /** Tool names the operator drops from every turn (the reachability floor's denylist). */
  toolDenylist: z.array(z.string().min(1)).optional(),
});
export type KeelsonConfig = z.infer<typeof keelsonConfigSchema>;
