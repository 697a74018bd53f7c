import type { WorkflowDefinition } from '@keelson/schema';

/** Where a catalog entry came from, lowest precedence first (a file scope overrides every rib entry). */
export const workflowScopes = ['RIB', 'BUNDLED', 'GLOBAL', 'PROJECT'] as const;
export type WorkflowScope = (typeof workflowScopes)[number];

/** A valid workflow definition and its provenance. */
export interface CatalogEntry {
  name: string;
  definition: WorkflowDefinition;
  /** The text it was read from (YAML/JSON as written; JSON for a rib's code entry). */
  source: string;
  scope: WorkflowScope;
  path?: string;
  ribId?: string;
  /** For rib entries: code (contributeWorkflows) or yaml (the package's workflows/ folder). */
  origin?: 'code' | 'yaml';
}

/** A definition the catalog rejected, naming the field and the reason. */
export interface CatalogLoadError {
  scope: WorkflowScope;
  path?: string;
  ribId?: string;
  message: string;
}
