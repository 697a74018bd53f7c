import type { Rib } from '@keelson/ribs-contract';

/** A YAML workflow shipped in a rib package's `workflows/` folder. */
export interface RibWorkflowFile {
  path: string;
  /** The file's text, as shipped. */
  text: string;
  /** The parsed document (validated later by the workflow loader). */
  definition: unknown;
  /** The document's `name`, else the file name without its extension. */
  name: string;
  description?: string;
}

/** A rib that passed discovery's shape checks. */
export interface RibCandidate {
  /** Its manifest key: the package suffix (`@keelson/rib-<key>`) or the `available` map key. */
  key: string;
  rib: Rib;
  source: 'discovered' | 'available';
  packageName?: string;
  packageDir?: string;
  workflowFiles: RibWorkflowFile[];
}
