import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { searchAttributes } from '@keelson/schema';

/**
 * Typed keys for the mesh's custom search attributes (all Keyword, as the dev server registers them),
 * for `typedSearchAttributes` on start and `upsertSearchAttributes` in workflows.
 */
export const searchAttributeKeys = {
  rib: defineSearchAttributeKey(searchAttributes.rib, SearchAttributeType.KEYWORD),
  workflowName: defineSearchAttributeKey(searchAttributes.workflowName, SearchAttributeType.KEYWORD),
  project: defineSearchAttributeKey(searchAttributes.project, SearchAttributeType.KEYWORD),
  kind: defineSearchAttributeKey(searchAttributes.kind, SearchAttributeType.KEYWORD),
  harness: defineSearchAttributeKey(searchAttributes.harness, SearchAttributeType.KEYWORD),
} as const;
