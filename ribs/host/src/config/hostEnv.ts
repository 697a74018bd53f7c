import { homedir } from 'node:os';
import { resolve } from 'node:path';
import { keelsonHome, parseEnv, type MeshEnv } from '@keelson/schema';

/** The default bound of a cross-rib call (and an `ask` it waits on). */
export const DEFAULT_CROSS_RIB_CALL_TIMEOUT_MS = 30_000;

/** The host's view of the environment, parsed once. */
export interface HostEnv {
  /** The `KEELSON_RIBS` filter, or undefined when every installed rib activates. */
  ribs: readonly string[] | undefined;
  crossRibGrants: string | undefined;
  crossRibCallTimeoutMs: number;
  ribWorkflowGrants: string | undefined;
  ribApprovalGrants: string | undefined;
  /** The resolved absolute keelson home. */
  home: string;
  /** `KEELSON_SANDBOX`. */
  sandbox: MeshEnv['KEELSON_SANDBOX'];
}

/**
 * The rib host's variables from the mesh's one env schema (`@keelson/schema` parseEnv): empty
 * strings count as unset; a bad variable fails fast, named.
 */
export function parseHostEnv(env: Record<string, string | undefined>): HostEnv {
  const parsed = parseEnv(env);
  const ribs = parsed.KEELSON_RIBS?.split(',')
    .map((id) => id.trim())
    .filter((id) => id.length > 0);
  return {
    ribs: ribs && ribs.length > 0 ? ribs : undefined,
    crossRibGrants: parsed.KEELSON_CROSS_RIB_GRANTS,
    crossRibCallTimeoutMs: parsed.KEELSON_CROSS_RIB_CALL_TIMEOUT_MS,
    ribWorkflowGrants: parsed.KEELSON_RIB_WORKFLOW_GRANTS,
    ribApprovalGrants: parsed.KEELSON_RIB_APPROVAL_GRANTS,
    home: resolve(keelsonHome(parsed, homedir())),
    sandbox: parsed.KEELSON_SANDBOX,
  };
}
